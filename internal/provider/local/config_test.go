package local

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// readConfig reads a YAML document and fails the test on a read error.
func readConfig(t *testing.T, doc string) Config {
	t.Helper()
	cfg, err := Read(strings.NewReader(doc))
	require.NoError(t, err)
	return cfg
}

const validPools = `
loadBalancer:
  pools:
  - name: default
    addresses: ["127.0.200.0/24"]
`

func TestReadFillsDefaults(t *testing.T) {
	cfg := readConfig(t, `
instances:
- name: node-a
  addresses:
  - {type: InternalIP, address: 127.0.0.10}
- name: node-b
  providerID: local://b
  instanceType: local.large
  zone: local-b
  region: elsewhere
  state: shutdown
loadBalancer:
  pools:
  - name: default
    addresses: ["127.0.200.0/24", "127.0.201.10-127.0.201.20"]
  - name: team
    addresses: ["127.0.202.0/28"]
    namespaces: [team-a, team-b]
`)
	require.NoError(t, cfg.Validate())

	assert.Equal(t, "local", cfg.Region)
	assert.Equal(t, "local-a", cfg.Zone)
	assert.Equal(t, DefaultInstanceType, cfg.InstanceType)
	assert.Equal(t, 2*time.Second, cfg.ReloadInterval.Duration)
	hc := cfg.LoadBalancer.HealthCheck
	assert.Equal(t, 2*time.Second, hc.Interval.Duration)
	assert.Equal(t, time.Second, hc.Timeout.Duration)
	assert.Equal(t, 2, hc.UnhealthyThreshold)
	assert.Equal(t, 1, hc.HealthyThreshold)
	assert.Equal(t, 60*time.Second, cfg.LoadBalancer.UDPIdleTimeout.Duration)

	require.Len(t, cfg.Instances, 2)
	assert.Equal(t, Instance{
		Name:      "node-a",
		Addresses: []Address{{Type: v1.NodeInternalIP, Address: "127.0.0.10"}},
	}, cfg.Instances[0])
	assert.Equal(t, Instance{
		Name: "node-b", ProviderID: "local://b", InstanceType: "local.large",
		Zone: "local-b", Region: "elsewhere", State: StateShutdown,
	}, cfg.Instances[1])
	require.Len(t, cfg.LoadBalancer.Pools, 2)
	assert.Equal(t, PoolConfig{Name: "team", Addresses: []string{"127.0.202.0/28"}, Namespaces: []string{"team-a", "team-b"}}, cfg.LoadBalancer.Pools[1])
}

func TestReadKeepsGivenValues(t *testing.T) {
	cfg := readConfig(t, `
autoInventory: true
region: r1
zone: z1
instanceType: t1
reloadInterval: 5s
loadBalancer:
  disabled: true
  udpIdleTimeout: 30s
  healthCheck: {interval: 10s, timeout: 3s, unhealthyThreshold: 4, healthyThreshold: 3}
`)
	require.NoError(t, cfg.Validate())
	assert.Equal(t, "r1", cfg.Region)
	assert.Equal(t, "z1", cfg.Zone)
	assert.Equal(t, "t1", cfg.InstanceType)
	assert.Equal(t, 5*time.Second, cfg.ReloadInterval.Duration)
	assert.True(t, cfg.LoadBalancer.Disabled)
	assert.Equal(t, 30*time.Second, cfg.LoadBalancer.UDPIdleTimeout.Duration)
	hc := cfg.LoadBalancer.HealthCheck
	assert.Equal(t, 10*time.Second, hc.Interval.Duration)
	assert.Equal(t, 3*time.Second, hc.Timeout.Duration)
	assert.Equal(t, 4, hc.UnhealthyThreshold)
	assert.Equal(t, 3, hc.HealthyThreshold)
}

func TestReadWithoutAFileIsAnError(t *testing.T) {
	_, err := Read(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--cloud-config")
}

func TestValidateListsEveryProblem(t *testing.T) {
	cfg := readConfig(t, `
reloadInterval: 10ms
instances:
- name: ""
- name: Bad_Name
  providerID: aws:///i-123
  state: paused
  addresses:
  - {type: PrivateIP, address: 127.0.0.1}
  - {type: InternalIP, address: not-an-ip}
  - {type: Hostname, address: ""}
- name: twin
  providerID: local://same
- name: twin
  providerID: local://same
- name: empty-id
  providerID: "local://"
loadBalancer:
  udpIdleTimeout: 2h
  healthCheck: {interval: 10m, timeout: 20m, unhealthyThreshold: 11, healthyThreshold: -1}
  pools:
  - addresses: ["127.0.200.0/24"]
  - name: empty
  - name: broken
    addresses: ["127.0.201.1/24", "nonsense"]
    namespaces: [Not_A_Namespace]
`)
	err := cfg.Validate()
	require.Error(t, err)
	msg := err.Error()
	for _, key := range []string{
		"reloadInterval: 10ms is outside",
		"instances[0].name: required",
		`instances[1].name: "Bad_Name" is not a valid Node name`,
		`instances[1].providerID: "aws:///i-123" must look like local://<id>`,
		`instances[1].state: "paused" is not one of`,
		`instances[1].addresses[0].type: "PrivateIP" is not one of`,
		`instances[1].addresses[1].address: "not-an-ip" is not an IP address`,
		"instances[1].addresses[2].address: required",
		`instances[3].name: "twin" is also the name of instances[2]`,
		`instances[3].providerID: "local://same" is also the providerID of instances[2]`,
		`instances[4].providerID: "local://" must look like`,
		"loadBalancer.pools[0].name: required",
		"loadBalancer.pools[1].addresses: required",
		"loadBalancer.pools[2].addresses[0]: \"127.0.201.1/24\" has host bits set; did you mean 127.0.201.0/24?",
		`loadBalancer.pools[2].addresses[1]: "nonsense" is not a CIDR, a range or an address`,
		`loadBalancer.pools[2].namespaces[0]: "Not_A_Namespace" is not a namespace name`,
		"loadBalancer.healthCheck.interval: 10m0s is outside",
		"loadBalancer.healthCheck.timeout: 20m0s must be positive and at most the interval",
		"loadBalancer.healthCheck.unhealthyThreshold: 11 is outside",
		"loadBalancer.healthCheck.healthyThreshold: -1 is outside",
		"loadBalancer.udpIdleTimeout: 2h0m0s is outside",
	} {
		assert.Contains(t, msg, key)
	}
	assert.Len(t, strings.Split(msg, "\n"), 21, "one line per problem:\n%s", msg)
}

// validations are TestValidate's cases: a config document, valid or with
// the problems its error must name.
var validations = []struct {
	name    string
	doc     string
	wantErr []string // substrings; none means valid
}{
	{
		name: "inline instances with a pool are valid",
		doc:  "instances: [{name: a}]\n" + validPools,
	},
	{
		name: "autoInventory alone is a valid source of instances",
		doc:  "autoInventory: true\n" + validPools,
	},
	{
		name: "an inventory file alone is a valid source of instances",
		doc:  "inventoryFile: /nonexistent/inventory.yaml\n" + validPools,
	},
	{
		name: "a disabled load balancer needs no pools",
		doc:  "autoInventory: true\nloadBalancer: {disabled: true}\n",
	},
	{
		name:    "both an inventory file and inline instances are refused",
		doc:     "inventoryFile: /x.yaml\ninstances: [{name: a}]\n" + validPools,
		wantErr: []string{"inventoryFile and instances: give one or the other"},
	},
	{
		name:    "no instances, no inventory file and no autoInventory are refused",
		doc:     validPools,
		wantErr: []string{"instances: no instances, no inventoryFile and autoInventory is false"},
	},
	{
		name:    "an enabled load balancer without pools is refused",
		doc:     "autoInventory: true\n",
		wantErr: []string{"loadBalancer.pools: no pools"},
	},
	{
		name:    "a reload interval below 100ms is refused",
		doc:     "autoInventory: true\nreloadInterval: 50ms\n" + validPools,
		wantErr: []string{"reloadInterval: 50ms is outside 100ms..1h"},
	},
	{
		name:    "a reload interval above an hour is refused",
		doc:     "autoInventory: true\nreloadInterval: 2h\n" + validPools,
		wantErr: []string{"reloadInterval: 2h0m0s is outside 100ms..1h"},
	},
	{
		name:    "a negative reload interval is refused",
		doc:     "autoInventory: true\nreloadInterval: -1s\n" + validPools,
		wantErr: []string{"reloadInterval: -1s is outside"},
	},
	{
		name:    "a health check interval below 100ms is refused",
		doc:     "autoInventory: true\nloadBalancer: {disabled: true, healthCheck: {interval: 10ms, timeout: 5ms}}\n",
		wantErr: []string{"loadBalancer.healthCheck.interval: 10ms is outside 100ms..5m"},
	},
	{
		name:    "a negative health check timeout is refused",
		doc:     "autoInventory: true\nloadBalancer: {disabled: true, healthCheck: {timeout: -1s}}\n",
		wantErr: []string{"loadBalancer.healthCheck.timeout: -1s must be positive"},
	},
	{
		name:    "a health check timeout longer than the interval is refused",
		doc:     "autoInventory: true\nloadBalancer: {disabled: true, healthCheck: {interval: 1s, timeout: 2s}}\n",
		wantErr: []string{"loadBalancer.healthCheck.timeout: 2s must be positive and at most the interval (1s)"},
	},
	{
		name:    "a UDP idle timeout below a second is refused",
		doc:     "autoInventory: true\nloadBalancer: {disabled: true, udpIdleTimeout: 500ms}\n",
		wantErr: []string{"loadBalancer.udpIdleTimeout: 500ms is outside 1s..1h"},
	},
	{
		name:    "a UDP idle timeout above an hour is refused",
		doc:     "autoInventory: true\nloadBalancer: {disabled: true, udpIdleTimeout: 61m}\n",
		wantErr: []string{"loadBalancer.udpIdleTimeout: 1h1m0s is outside 1s..1h"},
	},
	{
		name: "every address type is accepted",
		doc: `instances:
- name: a
  addresses:
  - {type: InternalIP, address: 127.0.0.1}
  - {type: ExternalIP, address: "::1"}
  - {type: Hostname, address: a}
  - {type: InternalDNS, address: a.internal}
  - {type: ExternalDNS, address: a.example}
` + validPools,
	},
	{
		name:    "an IP address with a zone is refused",
		doc:     "instances: [{name: a, addresses: [{type: InternalIP, address: 'fe80::1%eth0'}]}]\n" + validPools,
		wantErr: []string{`instances[0].addresses[0].address: "fe80::1%eth0" is not an IP address`},
	},
}

func TestValidate(t *testing.T) {
	for _, tt := range validations {
		t.Run(tt.name, func(t *testing.T) {
			cfg := readConfig(t, tt.doc)
			err := cfg.Validate()
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, want := range tt.wantErr {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

func TestReadReportsEveryUnknownKeyWithItsPath(t *testing.T) {
	cfg, err := Read(strings.NewReader(`
autoInventroy: true
instances:
- name: a
  adresses: []
loadBalancer:
  pools:
  - name: default
    adresses: ["127.0.200.0/24"]
  healthCheck: {intervall: 2s}
Region: r
`))
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"autoInventroy: unknown key",
		"instances[0].adresses: unknown key",
		"loadBalancer.pools[0].adresses: unknown key",
		"loadBalancer.healthCheck.intervall: unknown key",
		`Region: unknown key (did you mean "region"?)`,
	} {
		assert.Contains(t, msg, want)
	}
	// What could be decoded is returned, defaults filled, for Validate to add to.
	assert.Equal(t, "a", cfg.Instances[0].Name)
	assert.Equal(t, DefaultZone, cfg.Zone)
}

func TestReadReportsTypeErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"a duration that is not one is explained", "reloadInterval: soon\n", `invalid duration "soon"`},
		{"a number where a duration goes is refused", "reloadInterval: 5\n", "want a duration such as 30s"},
		{"a scalar where a list goes is refused", "instances: node-a\n", "instances: cannot use a string here, want a list"},
		{"a list as the document is refused", "- a\n", "must be a mapping"},
		{"broken YAML is refused", "instances: [\n", "not valid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"",
		"autoInventory: true\n" + validPools,
		"instances: [{name: a, addresses: [{type: InternalIP, address: 127.0.0.1}]}]\n" + validPools,
		"inventoryFile: /x.yaml\ninstances: [{name: a}]\n",
		"reloadInterval: soon\n",
		"reloadInterval: -5h\nloadBalancer: {healthCheck: {interval: 0s, timeout: -1s, unhealthyThreshold: -3}}\n",
		"loadBalancer: {pools: [{name: a, addresses: ['::ffff:127.0.0.0/120', '10.0.0.9-10.0.0.1', '::1-127.0.0.1']}]}\n",
		"loadBalancer: {pools: [{name: a, addresses: ['0.0.0.0/0', '::/0']}, {name: a, namespaces: [A]}]}\n",
		"instances: 3\n",
		"- a\n",
		"a: [\n",
		"{}",
		"null",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		cfg, _ := Read(strings.NewReader(doc))
		_ = cfg.Validate()
	})
}
