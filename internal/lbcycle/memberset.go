package lbcycle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// MembersKept is how many member keys of one load balancer the drift check
// keeps one by one (each named in what it tells). More are kept as one key
// a pool (CompactMembers): 2,000 load balancers on 5,000 Nodes would be 10
// million keys, memory in M × N.
const MembersKept = 256

// CompactMembers is objects with its member keys, when there are more than
// MembersKept, replaced by one key for each parent they are members of
// (what follows " of "): the digest of their identities and the digest of
// the keys. Its identity holds the first digest alone, so a change of Nodes
// (other members) reads as a set gone and another new, which a pass that
// adopts members takes, while a member changed in place (its weight, say)
// reads as the set changed, which is drift. Objects without that many
// members come back as they are.
func CompactMembers(objects []string) []string {
	n := 0
	for _, k := range objects {
		if strings.HasPrefix(k, MemberPrefix) {
			n++
		}
	}
	if n <= MembersKept {
		return objects
	}
	byParent := map[string][]string{}
	out := make([]string, 0, len(objects)-n+1)
	for _, k := range objects {
		if !strings.HasPrefix(k, MemberPrefix) {
			out = append(out, k)
			continue
		}
		parent := ""
		if i := strings.LastIndex(k, " of "); i >= 0 {
			parent = k[i+len(" of "):]
		}
		byParent[parent] = append(byParent[parent], k)
	}
	for parent, keys := range byParent {
		ids := make([]string, len(keys))
		for i, k := range keys {
			ids[i] = identity(k)
		}
		slices.Sort(ids)
		slices.Sort(keys)
		out = append(out, MemberSetKey(Digest(ids), len(keys), Digest(keys), parent))
	}
	return out
}

// MemberSetKey is the one key of parent's many members (CompactMembers):
// the digest of their identities is its identity, their count and the
// digest of their keys its fields. A cloud whose listing already holds
// them so (OCI's backend sets beyond MembersKept) keys them with it.
func MemberSetKey(ids string, n int, keys, parent string) string {
	return fmt.Sprintf("%sset-%s n=%d keys=%s of %s", MemberPrefix, ids, n, keys, parent)
}

// Digest is a short digest of keys, in their order: the one CompactMembers
// keys many members by (and OCI its backend sets listed as ManyBackends).
func Digest(keys []string) string {
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
