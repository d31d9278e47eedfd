package annotation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOCIParsers(t *testing.T) {
	nsg := "ocid1.networksecuritygroup.oc1.iad.aaaa"
	for _, tt := range []struct {
		name  string
		kv    []string
		check func(t *testing.T, svcKV []string)
	}{
		{"NSGs: blanks and repeats dropped", []string{string(OCINetworkSecurityGroups), " " + nsg + " ,," + nsg}, func(t *testing.T, kv []string) {
			got, err := OCINetworkSecurityGroups.OCIDs(svcWith(kv...), "networksecuritygroup", OCIMaxNetworkSecurityGroups)
			require.NoError(t, err)
			assert.Equal(t, []string{nsg}, got)
		}},
		{"NSGs: another kind of OCID is invalid", []string{string(OCINetworkSecurityGroups), "ocid1.subnet.oc1.iad.aaaa"}, func(t *testing.T, kv []string) {
			_, err := OCINetworkSecurityGroups.OCIDs(svcWith(kv...), "networksecuritygroup", OCIMaxNetworkSecurityGroups)
			assert.ErrorContains(t, err, "ocid1.networksecuritygroup")
		}},
		{"NSGs: six are too many", []string{string(OCINetworkSecurityGroups), nsg + "1," + nsg + "2," + nsg + "3," + nsg + "4," + nsg + "5," + nsg + "6"}, func(t *testing.T, kv []string) {
			_, err := OCINetworkSecurityGroups.OCIDs(svcWith(kv...), "networksecuritygroup", OCIMaxNetworkSecurityGroups)
			assert.ErrorContains(t, err, "at most 5")
		}},
		{"a bandwidth with its unit", []string{string(OCIShapeFlexMax), "400Mbps"}, func(t *testing.T, kv []string) {
			got, err := OCIShapeFlexMax.Bandwidth(svcWith(kv...))
			require.NoError(t, err)
			assert.Equal(t, 400, got)
		}},
		{"a bandwidth below 10 is invalid", []string{string(OCIShapeFlexMin), "5"}, func(t *testing.T, kv []string) {
			_, err := OCIShapeFlexMin.Bandwidth(svcWith(kv...))
			var inv *InvalidError
			assert.ErrorAs(t, err, &inv)
		}},
		{"ports, repeats dropped", []string{string(OCISSLPorts), "443, 8443,443"}, func(t *testing.T, kv []string) {
			got, err := OCISSLPorts.Ports(svcWith(kv...))
			require.NoError(t, err)
			assert.Equal(t, []int32{443, 8443}, got)
		}},
		{"a port out of range is invalid", []string{string(OCISSLPorts), "443,70000"}, func(t *testing.T, kv []string) {
			_, err := OCISSLPorts.Ports(svcWith(kv...))
			assert.ErrorContains(t, err, "1 to 65535")
		}},
		{"a Secret in the Service's namespace", []string{string(OCITLSSecret), "web-tls"}, func(t *testing.T, kv []string) {
			svc := svcWith(kv...)
			svc.Namespace = "shop"
			ns, name, err := OCITLSSecret.SecretRef(svc)
			require.NoError(t, err)
			assert.Equal(t, [2]string{"shop", "web-tls"}, [2]string{ns, name})
		}},
		{"a Secret of another namespace", []string{string(OCITLSSecret), "certs/web-tls"}, func(t *testing.T, kv []string) {
			ns, name, err := OCITLSSecret.SecretRef(svcWith(kv...))
			require.NoError(t, err)
			assert.Equal(t, [2]string{"certs", "web-tls"}, [2]string{ns, name})
		}},
		{"a Secret reference with two slashes is invalid", []string{string(OCITLSSecret), "a/b/c"}, func(t *testing.T, kv []string) {
			_, _, err := OCITLSSecret.SecretRef(svcWith(kv...))
			assert.ErrorContains(t, err, "<namespace>/<name>")
		}},
		{"freeform tags", []string{string(OCIInitialFreeformTagsOverride), `{"team": "web"}`}, func(t *testing.T, kv []string) {
			got, err := OCIInitialFreeformTagsOverride.FreeformTags(svcWith(kv...))
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"team": "web"}, got)
		}},
		{"defined tags that are not JSON are invalid", []string{string(OCIInitialDefinedTagsOverride), `{ns: {k: v}}`}, func(t *testing.T, kv []string) {
			_, err := OCIInitialDefinedTagsOverride.DefinedTags(svcWith(kv...))
			assert.ErrorContains(t, err, `JSON {"namespace": {"key": "value"}}`)
		}},
		{"the type in any case", []string{string(OCILoadBalancerType), "NLB"}, func(t *testing.T, kv []string) {
			got, err := OCILoadBalancerType.OneOf(svcWith(kv...), []string{"lb", "nlb"})
			require.NoError(t, err)
			assert.Equal(t, "nlb", got)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, tt.kv) })
	}
}

func FuzzOCIParsers(f *testing.F) {
	for _, s := range []string{"", "ocid1.networksecuritygroup.oc1.iad.a,ocid1.x", "100Mbps", "443,80", "ns/name", `{"a":"b"}`, `{"n":{"k":1}}`, "nlb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		svc := svcWith("x", v)
		const n Name = "x"
		_, _ = n.OCIDs(svc, "networksecuritygroup", OCIMaxNetworkSecurityGroups)
		_, _ = n.OCID(svc, "subnet")
		_, _ = n.Ports(svc)
		_, _ = n.Bandwidth(svc)
		_, _, _ = n.SecretRef(svc)
		_, _ = n.FreeformTags(svc)
		_, _ = n.DefinedTags(svc)
		_, _ = n.OneOf(svc, []string{"lb", "nlb"})
	})
}
