package ociapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// OCI lists a load balancer whole, each backend set with its backends: 2,000
// load balancers on 5,000 Nodes are 10 million backends in every listing.
// A backend set of more than lbcycle.MembersKept backends is kept as their
// digest instead (ManyBackends), decoded one page at a time, so the
// listing's memory does not grow with M × N. What needs them one by one
// (explain) reads the backend set's backends (ListBackends).

// ManyBackends stands for a backend set's backends when there are more than
// lbcycle.MembersKept: their count, the digest of their identities (address,
// port, instance), that of their keys (identity and every field compared:
// a weight or a drain changed out of band changes it), and their ports.
type ManyBackends struct {
	Count int
	IDs   string
	Keys  string
	Ports []int
}

// UnmarshalJSON decodes a backend set, its backends kept as ManyBackends
// beyond lbcycle.MembersKept.
func (bs *BackendSet) UnmarshalJSON(data []byte) error {
	type plain BackendSet
	if err := json.Unmarshal(data, (*plain)(bs)); err != nil {
		return err
	}
	if len(bs.Backends) > lbcycle.MembersKept {
		m := DigestBackends(bs.Backends)
		bs.Many, bs.Backends = &m, nil
	}
	return nil
}

// UnmarshalJSONFrom decodes a backend set from a stream (a listing's
// page): its backends are read one at a time into their digest, so the
// backends of a set beyond lbcycle.MembersKept are never held.
func (bs *BackendSet) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return err
	}
	if _, err := dec.ReadToken(); err != nil { // {
		return err
	}
	var rest bytes.Buffer
	others := jsontext.NewEncoder(&rest)
	if err := others.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	var backends []Backend
	var d backendDigest
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if !strings.EqualFold(name.String(), "backends") {
			if err := copyMember(dec, others, name); err != nil {
				return err
			}
			continue
		}
		if backends, err = decodeBackends(dec, &d); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil { // }
		return err
	}
	if err := others.WriteToken(jsontext.EndObject); err != nil {
		return err
	}
	type plain BackendSet
	if err := json.Unmarshal(rest.Bytes(), (*plain)(bs)); err != nil {
		return err
	}
	bs.Backends, bs.Many = backends, nil
	if d.n > lbcycle.MembersKept {
		m := d.many()
		bs.Many = &m
	}
	return nil
}

// copyMember copies the member named name from dec to enc.
func copyMember(dec *jsontext.Decoder, enc *jsontext.Encoder, name jsontext.Token) error {
	if err := enc.WriteToken(name); err != nil {
		return err
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	return enc.WriteValue(v)
}

// decodeBackends reads a backends array from dec into d, and returns them
// while they are at most lbcycle.MembersKept.
func decodeBackends(dec *jsontext.Decoder, d *backendDigest) ([]Backend, error) {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return nil, err
	}
	if _, err := dec.ReadToken(); err != nil { // [
		return nil, err
	}
	kept := []Backend{} // as encoding/json: [] is not null
	var b Backend
	for dec.PeekKind() != ']' {
		b = Backend{}
		if err := decodeBackend(dec, &b); err != nil {
			return nil, err
		}
		d.add(&b)
		switch {
		case d.n <= lbcycle.MembersKept:
			kept = append(kept, b)
		case kept != nil:
			kept = nil
		}
	}
	for i := range kept {
		own(&kept[i])
	}
	_, err := dec.ReadToken() // ]
	return kept, err
}

// MarshalJSON encodes a backend set; one listed as ManyBackends is refused:
// its backends are not there to send.
func (bs BackendSet) MarshalJSON() ([]byte, error) {
	if bs.Many != nil {
		return nil, errors.New("a backend set listed by its digest cannot be sent")
	}
	type plain BackendSet
	return json.Marshal(plain(bs))
}

// DigestBackends is backends as ManyBackends.
func DigestBackends(backends []Backend) ManyBackends {
	var d backendDigest
	for i := range backends {
		d.add(&backends[i])
	}
	return d.many()
}

// backendDigest digests backends one at a time, in any order: each
// backend's identity and key are hashed (maphash, this process's seeds:
// the digests are compared within it, never kept) and the hashes summed,
// so a listing's backends are digested as they are decoded, none kept.
type backendDigest struct {
	n         int
	ids, keys [2]uint64
	ports     []int
	buf       []byte
}

var digestSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func (d *backendDigest) add(b *Backend) {
	d.n++
	if !slices.Contains(d.ports, b.Port) {
		d.ports = append(d.ports, b.Port)
	}
	d.buf = appendBackendID(d.buf[:0], b)
	sum(&d.ids, d.buf)
	d.buf = appendBackendFields(append(d.buf, 0), b)
	sum(&d.keys, d.buf)
}

func sum(acc *[2]uint64, b []byte) {
	for i, seed := range digestSeeds {
		acc[i] += maphash.Bytes(seed, b)
	}
}

func (d *backendDigest) many() ManyBackends {
	hex := func(v [2]uint64) string { return fmt.Sprintf("%016x%016x", v[0], v[1]) }
	return ManyBackends{Count: d.n, IDs: hex(d.ids), Keys: hex(d.keys), Ports: slices.Sorted(slices.Values(d.ports))}
}

// appendBackendID is backendID's bytes: address, port and instance.
func appendBackendID(buf []byte, b *Backend) []byte {
	buf = append(buf, b.IPAddress...)
	buf = strconv.AppendInt(append(buf, 0), int64(b.Port), 10)
	return append(append(buf, 0), b.TargetID...)
}

// appendBackendFields is backendFields' got side as bytes: the weight and
// each state, an LB's and an NLB's names read as one.
func appendBackendFields(buf []byte, b *Backend) []byte {
	buf = strconv.AppendInt(buf, int64(b.Weight), 10)
	for _, state := range [][2]*bool{{b.Drain, b.IsDrain}, {b.Backup, b.IsBackup}, {b.Offline, b.IsOffline}} {
		buf = strconv.AppendBool(append(buf, 0), isTrue(state[0]) || isTrue(state[1]))
	}
	return buf
}

// isTrue says whether an optional flag is set.
func isTrue(b *bool) bool { return b != nil && *b }
