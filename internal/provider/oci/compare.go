package oci

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// sameRuleSet says whether got has want's rules, in order: each rule with
// want's fields as want has them (OCI may fill in others).
func sameRuleSet(got, want ociapi.RuleSet) bool {
	if len(got.Items) != len(want.Items) {
		return false
	}
	for i := range want.Items {
		var g, w any
		if json.Unmarshal(got.Items[i], &g) != nil || json.Unmarshal(want.Items[i], &w) != nil || !subset(w, g) {
			return false
		}
	}
	return true
}

// subset says whether got has every field of want, equal (lists equal
// item by item).
func subset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !subset(v, g[k]) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return want == got
}

// sameBackendSet says whether got is want: its fields (backendSetFields)
// and its backends, each with its fields (backendFields).
func sameBackendSet(got, want ociapi.BackendSet) bool {
	return sameFields(backendSetFields(got, want)) && sameBackends(got, want)
}

// sameSSL compares SSL configurations as the peer does: the cipher suite
// and protocols only when they are asked for (OCI fills in its defaults).
func sameSSL(got, want *ociapi.SSLConfiguration) bool { return sameFields(sslFields(got, want)) }

// backendKeys are a backend set's backends as sorted strings: each one's
// identity (backendID) and converged fields.
func backendKeys(bs ociapi.BackendSet) []string {
	keys := make([]string, len(bs.Backends))
	for i, b := range bs.Backends {
		keys[i] = backendID(b) + " " + fieldKey(backendFields(b, b))
	}
	slices.Sort(keys)
	return keys
}

// backendID is what names a backend in its set: its address and port (and
// an NLB's, its instance).
func backendID(b ociapi.Backend) string {
	id := fmt.Sprintf("%s:%d", b.IPAddress, b.Port)
	if b.TargetID != "" {
		id += " (" + b.TargetID + ")"
	}
	return id
}

// sameListener says whether got is want, field by field (listenerFields).
func sameListener(got, want ociapi.Listener) bool { return sameFields(listenerFields(got, want)) }

// isTrue says whether an optional flag is set.
func isTrue(b *bool) bool { return b != nil && *b }
