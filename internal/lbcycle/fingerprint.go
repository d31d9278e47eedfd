package lbcycle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
)

// Hash makes one part of a Fingerprint: a short hash of lines, each what
// fmt.Println prints of its values. A cloud writes a line of everything its
// converge acts on, in a fixed order, starting with a version word it changes
// when what a line means changes.
type Hash struct{ h hash.Hash }

// NewHash starts a Hash.
func NewHash() *Hash { return &Hash{h: sha256.New()} }

// Line adds a line of a's values.
func (h *Hash) Line(a ...any) { fmt.Fprintln(h.h, a...) }

// Config is the hash as a Fingerprint's Config part (16 hex digits).
func (h *Hash) Config() string { return h.sum(16) }

// Members is the hash as a Fingerprint's Members part (8 hex digits).
func (h *Hash) Members() string { return h.sum(8) }

func (h *Hash) sum(n int) string { return hex.EncodeToString(h.h.Sum(nil))[:n] }

// MembersOf is the Members part of members (sorted by the caller, so that
// the same set hashes the same).
func MembersOf(members any) string {
	h := NewHash()
	h.Line(members)
	return h.Members()
}
