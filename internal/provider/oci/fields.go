package oci

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// What of each child of a load balancer is converged, field by field: one
// list per kind (backendFields, backendSetFields, listenerFields) from
// which the walk compares (sameBackendSet, sameListener), the drift check
// names the child (Objects) and explain says what differs
// (backendSetDiff, listenerDiff). A field in one and not the others would
// be a change the drift check sees and the walk never repairs (adopted as
// normal, silently), or one it never sees: hence one list. fields_test.go
// holds every field the CCM sends to the list, or to the table of those
// left out and why.

// field is one converged field of a child: its name as a person reads it
// and its value in the child as it is (got) and as asked (want).
type field struct {
	name, got, want string
	// ifAsked: compared only when want is not "" (OCI fills in its
	// default, which the Service leaves to the user, as the peer does).
	ifAsked bool
}

// compared says whether f is compared: asked, or always.
func (f field) compared() bool { return !f.ifAsked || f.want != "" }

// differs says whether f is compared and got is not want.
func (f field) differs() bool { return f.compared() && f.got != f.want }

// sameFields says whether no field differs.
func sameFields(fs []field) bool {
	return !slices.ContainsFunc(fs, field.differs)
}

// fieldDiffs say each field that differs: "weight 7, the Service asks 1".
func fieldDiffs(fs []field) []string {
	var out []string
	for _, f := range fs {
		if f.differs() {
			out = append(out, fmt.Sprintf("%s %s, the Service asks %s", f.name, orNone(f.got), orNone(f.want)))
		}
	}
	return out
}

// fieldKey is the compared fields as they are, for a drift key.
func fieldKey(fs []field) string {
	var parts []string
	for _, f := range fs {
		if f.compared() {
			parts = append(parts, f.name+" "+orNone(f.got))
		}
	}
	return strings.Join(parts, ", ")
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

func boolText(b *bool) string { return strconv.FormatBool(isTrue(b)) }

// backendFields are what of a backend is converged beside its address and
// port (its identity): its weight and states, an LB's and an NLB's names
// read as one (Backend).
func backendFields(got, want ociapi.Backend) []field {
	either := func(a, b *bool) *bool {
		if isTrue(a) || isTrue(b) {
			return &[]bool{true}[0]
		}
		return nil
	}
	return []field{
		{name: "weight", got: strconv.Itoa(got.Weight), want: strconv.Itoa(want.Weight)},
		{name: "drain", got: boolText(either(got.Drain, got.IsDrain)), want: boolText(either(want.Drain, want.IsDrain))},
		{name: "backup", got: boolText(either(got.Backup, got.IsBackup)), want: boolText(either(want.Backup, want.IsBackup))},
		{name: "offline", got: boolText(either(got.Offline, got.IsOffline)), want: boolText(either(want.Offline, want.IsOffline))},
	}
}

// healthFields are a health checker's fields, all compared.
func healthFields(got, want ociapi.HealthChecker) []field {
	i := strconv.Itoa
	return []field{
		{name: "health check protocol", got: got.Protocol, want: want.Protocol},
		{name: "health check port", got: i(got.Port), want: i(want.Port)},
		{name: "health check path", got: got.URLPath, want: want.URLPath},
		{name: "health check return code", got: i(got.ReturnCode), want: i(want.ReturnCode)},
		{name: "health check retries", got: i(got.Retries), want: i(want.Retries)},
		{name: "health check timeout ms", got: i(got.TimeoutInMillis), want: i(want.TimeoutInMillis)},
		{name: "health check interval ms", got: i(got.IntervalInMillis), want: i(want.IntervalInMillis)},
		{name: "health check forced plain text", got: strconv.FormatBool(got.IsForcePlainText), want: strconv.FormatBool(want.IsForcePlainText)},
	}
}

// sslFields are an SSL configuration's fields as the peer compares them:
// the cipher suite and protocols only when asked (OCI fills in its
// defaults).
func sslFields(got, want *ociapi.SSLConfiguration) []field {
	text := func(c *ociapi.SSLConfiguration) (cert, depth, verify, cipher, protocols string) {
		if c == nil {
			return "", "", "", "", ""
		}
		return c.CertificateName, strconv.Itoa(c.VerifyDepth), strconv.FormatBool(c.VerifyPeerCertificate), c.CipherSuiteName, strings.Join(c.Protocols, ",")
	}
	gc, gd, gv, gs, gp := text(got)
	wc, wd, wv, ws, wp := text(want)
	return []field{
		{name: "SSL certificate", got: gc, want: wc},
		{name: "SSL verify depth", got: gd, want: wd},
		{name: "SSL peer verification", got: gv, want: wv},
		{name: "SSL cipher suite", got: gs, want: ws, ifAsked: true},
		{name: "SSL protocols", got: gp, want: wp, ifAsked: true},
	}
}

// backendSetFields are a backend set's fields but its backends (each
// compared by backendFields).
func backendSetFields(got, want ociapi.BackendSet) []field {
	fs := []field{
		{name: "policy", got: got.Policy, want: want.Policy},
		{name: "source preservation", got: boolText(got.IsPreserveSource), want: boolText(want.IsPreserveSource)},
		{name: "IP version", got: versionOr(got.IPVersion), want: versionOr(want.IPVersion)},
	}
	fs = append(fs, healthFields(got.HealthChecker, want.HealthChecker)...)
	return append(fs, sslFields(got.SSLConfiguration, want.SSLConfiguration)...)
}

// listenerFields are a listener's fields; its connection configuration an
// LB's only (an NLB's listener has none: compared only when asked).
func listenerFields(got, want ociapi.Listener) []field {
	conn := func(c *ociapi.ConnectionConfiguration, none string) (idle, proxy string) {
		if c == nil {
			return none, none
		}
		return strconv.FormatInt(c.IdleTimeout, 10), strconv.Itoa(c.BackendTCPProxyProtocolVersion)
	}
	gi, gp := conn(got.ConnectionConfiguration, "0")
	wi, wp := conn(want.ConnectionConfiguration, "")
	sorted := func(names []string) string { return strings.Join(slices.Sorted(slices.Values(names)), ",") }
	fs := []field{
		{name: "protocol", got: got.Protocol, want: want.Protocol},
		{name: "port", got: strconv.Itoa(got.Port), want: strconv.Itoa(want.Port)},
		{name: "backend set", got: got.DefaultBackendSetName, want: want.DefaultBackendSetName},
		{name: "idle timeout", got: gi, want: wi, ifAsked: true},
		{name: "PROXY protocol version", got: gp, want: wp, ifAsked: true},
		{name: "PROXY protocol v2", got: boolText(got.IsPPv2Enabled), want: boolText(want.IsPPv2Enabled)},
		{name: "IP version", got: versionOr(got.IPVersion), want: versionOr(want.IPVersion)},
		{name: "rule sets", got: sorted(got.RuleSetNames), want: sorted(want.RuleSetNames)},
	}
	return append(fs, sslFields(got.SSLConfiguration, want.SSLConfiguration)...)
}

// newBackend is the backend of a kind at ip and port as the CCM asks it:
// weight 1 (the peer's) and none of the states, each sent under its kind's
// name (the API's defaults, sent so that an update puts them back).
func newBackend(kind, ip string, port int) ociapi.Backend {
	b := ociapi.Backend{IPAddress: ip, Port: port, Weight: 1}
	if kind == ociapi.KindNLB {
		b.IsDrain, b.IsBackup, b.IsOffline = new(bool), new(bool), new(bool)
	} else {
		b.Drain, b.Backup, b.Offline = new(bool), new(bool), new(bool)
	}
	return b
}
