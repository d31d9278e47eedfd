package ociapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
)

// backendsOn are n backends with every field of Backend set.
func backendsOn(n int) []Backend {
	out := make([]Backend, n)
	for i := range out {
		f := i%2 == 0
		out[i] = Backend{IPAddress: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), TargetID: fmt.Sprintf("ocid1.instance.oc1..i%d", i), Port: 30080,
			Weight: 1 + i%3, Drain: &f, Backup: &f, Offline: &f, IsDrain: &f, IsBackup: &f, IsOffline: &f}
	}
	return out
}

// pageOf is a listing's page of one load balancer whose backend set holds
// backends, as OCI answers it.
func pageOf(t *testing.T, backends []Backend) []byte {
	t.Helper()
	type plain BackendSet // as sent: every backend
	set := plain{Name: "TCP-80", Policy: "FIVE_TUPLE", Backends: backends, HealthChecker: HealthChecker{Protocol: "HTTP", Port: 10256, URLPath: "/healthz"}}
	page, err := json.Marshal([]map[string]any{{"id": "ocid1.loadbalancer.oc1..lb", "displayName": "svc", "lifecycleState": "ACTIVE",
		"backendSets": map[string]any{"TCP-80": set}}})
	require.NoError(t, err)
	return page
}

// The listing is decoded as it streams in (decodeAnswer), the backends of a
// set one at a time: it must read a page as encoding/json reads it, a set
// beyond lbcycle.MembersKept as its digest.
func TestAStreamedPageIsDecodedAsEncodingJSONDecodesIt(t *testing.T) {
	for _, n := range []int{0, 1, lbcycle.MembersKept, lbcycle.MembersKept + 1, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			page := pageOf(t, backendsOn(n))
			var streamed, whole []LB
			require.NoError(t, decodeAnswer(bytes.NewReader(page), &streamed))
			require.NoError(t, json.Unmarshal(page, &whole))
			got, want := streamed[0].BackendSets["TCP-80"], whole[0].BackendSets["TCP-80"]
			if n > lbcycle.MembersKept {
				require.NotNil(t, got.Many)
				assert.Equal(t, *want.Many, *got.Many)
				assert.Equal(t, n, got.Many.Count)
				assert.Nil(t, got.Backends, "the backends of a set beyond the kept count are not held")
			} else {
				assert.Nil(t, got.Many)
				assert.Len(t, got.Backends, n)
			}
			assert.Equal(t, whole, streamed)
		})
	}
}

// A malformed backends array is an error of the decode, not a set read
// short.
func TestAMalformedBackendIsADecodeError(t *testing.T) {
	for _, bad := range []string{`{"backends": [{"port": "x"}]}`, `{"backends": {"port": 1}}`, `{"backends": [1]}`, `{"backends": [{"port": 1}`} {
		var out []LB
		page := `[{"id": "lb", "backendSets": {"s": ` + bad + `}}]`
		assert.Error(t, decodeAnswer(bytes.NewReader([]byte(page)), &out), bad)
	}
}

// The digest of many backends does not depend on their order, and every
// field of a backend changes it: each field of Backend (read from the type,
// so a field added is in the table) set otherwise on one backend changes
// the keys' digest, and an identity field the identities' too.
func TestEveryFieldOfABackendChangesTheDigestAndTheOrderDoesNot(t *testing.T) {
	backends := backendsOn(lbcycle.MembersKept + 5)
	base := DigestBackends(backends)
	shuffled := append([]Backend(nil), backends...)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	assert.Equal(t, base, DigestBackends(shuffled))

	identity := map[string]bool{"IPAddress": true, "Port": true, "TargetID": true}
	bt := reflect.TypeFor[Backend]()
	for i := range bt.NumField() {
		field := bt.Field(i)
		t.Run(field.Name, func(t *testing.T) {
			changed := append([]Backend(nil), backends...)
			changeField(reflect.ValueOf(&changed[7]).Elem().Field(i))
			d := DigestBackends(changed)
			assert.NotEqual(t, base.Keys, d.Keys, "a changed %s is not in the keys' digest", field.Name)
			if identity[field.Name] {
				assert.NotEqual(t, base.IDs, d.IDs, "a changed %s is not in the identities' digest", field.Name)
			} else {
				assert.Equal(t, base.IDs, d.IDs, "%s is not an identity", field.Name)
			}
		})
	}
}

// changeField sets v (a Backend's field) to another value than
// backendsOn's.
func changeField(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "-other")
	case reflect.Int:
		v.SetInt(v.Int() + 100)
	case reflect.Pointer: // *bool: backendsOn's backend 7 has false
		t := true
		v.Set(reflect.ValueOf(&t))
	default:
		panic("a Backend field of kind " + v.Kind().String() + ": teach changeField")
	}
}
