package lbcycle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
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

// MembersLine makes what MembersOf makes of a list of strings, a member at
// a time without a string each: Begin each member, then Add its parts.
type MembersLine struct {
	b []byte
	n int
}

// Begin starts the next member.
func (l *MembersLine) Begin() {
	if l.n > 0 {
		l.b = append(l.b, ' ')
	}
	l.n++
}

// Add appends s to the member begun.
func (l *MembersLine) Add(s string) { l.b = append(l.b, s...) }

// AddInt appends i in decimal to the member begun.
func (l *MembersLine) AddInt(i int) { l.b = strconv.AppendInt(l.b, int64(i), 10) }

// Members is the Members part of the members added, as MembersOf's of
// their list.
func (l *MembersLine) Members() string {
	h := NewHash()
	h.h.Write([]byte{'['})
	h.h.Write(l.b)
	h.h.Write([]byte("]\n"))
	return h.Members()
}
