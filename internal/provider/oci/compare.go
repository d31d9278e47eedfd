package oci

import (
	"encoding/json"
	"fmt"
	"slices"
)

// sameRuleSet says whether got has want's rules, in order: each rule with
// want's fields as want has them (OCI may fill in others).
func sameRuleSet(got, want RuleSet) bool {
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

func sameBackendSet(got, want BackendSet) bool {
	return got.Policy == want.Policy && got.HealthChecker == want.HealthChecker && slices.Equal(backendKeys(got), backendKeys(want)) &&
		isTrue(got.IsPreserveSource) == isTrue(want.IsPreserveSource) && sameSSL(got.SSLConfiguration, want.SSLConfiguration) &&
		sameVersion(got.IPVersion, want.IPVersion)
}

// sameSSL compares SSL configurations as the peer does: the cipher suite
// and protocols only when they are asked for (OCI fills in its defaults).
func sameSSL(got, want *SSLConfiguration) bool {
	switch {
	case got == nil || want == nil:
		return got == want
	case got.CertificateName != want.CertificateName || got.VerifyDepth != want.VerifyDepth || got.VerifyPeerCertificate != want.VerifyPeerCertificate:
		return false
	case want.CipherSuiteName != "" && got.CipherSuiteName != want.CipherSuiteName:
		return false
	}
	return len(want.Protocols) == 0 || slices.Equal(got.Protocols, want.Protocols)
}

func isTrue(b *bool) bool { return b != nil && *b }

// backendKeys are a backend set's backends as sorted strings.
func backendKeys(bs BackendSet) []string {
	keys := make([]string, len(bs.Backends))
	for i, b := range bs.Backends {
		keys[i] = fmt.Sprintf("%s:%d/%d/%s", b.IPAddress, b.Port, b.Weight, b.TargetID)
	}
	slices.Sort(keys)
	return keys
}

func sameListener(got, want Listener) bool {
	if got.Port != want.Port || got.Protocol != want.Protocol || got.DefaultBackendSetName != want.DefaultBackendSetName ||
		isTrue(got.IsPPv2Enabled) != isTrue(want.IsPPv2Enabled) || !sameSSL(got.SSLConfiguration, want.SSLConfiguration) || !sameVersion(got.IPVersion, want.IPVersion) ||
		!slices.Equal(slices.Sorted(slices.Values(got.RuleSetNames)), slices.Sorted(slices.Values(want.RuleSetNames))) {
		return false
	}
	if want.ConnectionConfiguration == nil { // an NLB's
		return true
	}
	var g ConnectionConfiguration
	if got.ConnectionConfiguration != nil {
		g = *got.ConnectionConfiguration
	}
	return g == *want.ConnectionConfiguration
}
