package csapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"go/ast"
	"go/token"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	emulator "github.com/overcast-ccm/overcast/internal/emulator/cloudstack"
	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

const (
	wireKey     = "wire-api-key"
	wireSecret  = "wire-secret-key"
	wireProject = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
)

// sent is a request as the server reads it: its method and its parameters,
// the signature and expires (which differ by the second) left out once
// checked.
type sent struct {
	Method string
	Params url.Values
}

// recorder is a management server that records what it is sent, checks
// each signature as the server does (the emulator's Sign) and answers each
// command with an empty answer.
type recorder struct {
	mu   sync.Mutex
	got  []sent
	errs []string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	p := r.Form
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if want := emulator.Sign(p, wireSecret); p.Get("signature") != want {
		rec.errs = append(rec.errs, fmt.Sprintf("%s: signature %q, want %q", p.Get("command"), p.Get("signature"), want))
	}
	if exp, err := time.Parse(time.RFC3339, p.Get("expires")); err != nil || time.Until(exp) < 14*time.Minute {
		rec.errs = append(rec.errs, fmt.Sprintf("%s: expires %q", p.Get("command"), p.Get("expires")))
	}
	p.Del("signature")
	p.Del("expires")
	rec.got = append(rec.got, sent{Method: r.Method, Params: p})
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{%q: {}}`, strings.ToLower(p.Get("command"))+"response")
}

// take is what was sent since the last take.
func (rec *recorder) take() ([]sent, []string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	got, errs := rec.got, rec.errs
	rec.got, rec.errs = nil, nil
	return got, errs
}

// wireCase is one call of the gateway and the same call through
// cloudstack-go, as the gateway made it before it had its own client.
type wireCase struct {
	name string
	ours func(context.Context, *Client)
	sdk  func(*cs.CloudStackClient)
}

// Every call is sent as cloudstack-go sends it: the same method, the same
// parameters with the same encodings, and a signature the server accepts.
func TestCallsAreSentAsCloudStackGoSendsThem(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	gw, err := New(Settings{APIURL: srv.URL + "/client/api", APIKey: wireKey, SecretKey: wireSecret, ProjectID: wireProject})
	require.NoError(t, err)
	client := cs.NewClient(srv.URL+"/client/api", wireKey, wireSecret, false)
	ctx := t.Context()
	// listProjects is sent only for a project given by name:
	// TestTheProjectIsLookedUpAsCloudStackGoDoes holds it.
	held := map[string]bool{"listProjects": true}
	for _, c := range slices.Concat(wireMachines(), wireAddresses(), wireRules(), wireMembersAndHealthChecks(), wireOpeningsAndJobs()) {
		c.ours(ctx, gw)
		ours, errs := rec.take()
		assert.Empty(t, errs, c.name)
		c.sdk(client)
		theirs, _ := rec.take() // its signature of "~" is refused (TestSignaturesAreTheServers)
		require.NotEmpty(t, theirs, c.name)
		assert.Equal(t, theirs, ours, c.name)
		for _, r := range ours {
			held[r.Params.Get("command")] = true
		}
	}
	for _, command := range commandsSent(t) {
		assert.True(t, held[command], "the gateway sends %s, which no case above holds to cloudstack-go", command)
	}
}

// commandsSent are the API commands the provider's code names: every string
// argument of a call that is a command's name (a verb, then a capital), so
// that a new call is held to the SDK by the test above without anyone
// adding it by hand.
func commandsSent(t *testing.T) []string {
	t.Helper()
	verb := regexp.MustCompile(`^"(list|create|delete|update|assign|remove|associate|disassociate|query)[A-Z][A-Za-z]*"$`)
	_, files, err := providertest.Sources(".", 0)
	require.NoError(t, err)
	var out []string
	for _, file := range files {
		ast.Inspect(file, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				for _, a := range call.Args {
					if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING && verb.MatchString(lit.Value) {
						out = append(out, strings.Trim(lit.Value, `"`))
					}
				}
			}
			return true
		})
	}
	require.NotEmpty(t, out)
	slices.Sort(out)
	return slices.Compact(out)
}

// A project named, not given by UUID, is looked up as cloudstack-go does.
func TestTheProjectIsLookedUpAsCloudStackGoDoes(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	gw, err := New(Settings{APIURL: srv.URL + "/client/api", APIKey: wireKey, SecretKey: wireSecret, ProjectID: "team a"})
	require.NoError(t, err)
	_, err = gw.ProjectID(t.Context())
	require.ErrorContains(t, err, `no project named "team a"`)
	ours, errs := rec.take()
	assert.Empty(t, errs)
	client := cs.NewClient(srv.URL+"/client/api", wireKey, wireSecret, false)
	p := client.Project.NewListProjectsParams()
	p.SetName("team a")
	p.SetListall(true)
	_, _ = client.Project.ListProjects(p)
	theirs, _ := rec.take()
	assert.Equal(t, theirs, ours)
}

// Signatures are the server's (the emulator's Sign, ApiServer's check), and
// cloudstack-go's but for "~", which Go's QueryEscape keeps and Java's
// URLEncoder encodes: the server refuses the SDK's signature of one.
func TestSignaturesAreTheServers(t *testing.T) {
	for _, v := range []string{"plain", "two words", "a+b", "1/2*3", "a=b&c", "été", "10.0.0.0/8,192.0.2.0/24", "tilde~"} {
		p := url.Values{"name": {v}, "listall": {"true"}}
		query, signature := sign(p, "listVirtualMachines", wireKey, wireSecret, time.Now())
		assert.Equal(t, emulator.Sign(p, wireSecret), signature, v)
		parsed, err := url.ParseQuery(query)
		require.NoError(t, err, v)
		assert.Equal(t, p, parsed, "the canonical form is the query as sent: %s", v)

		mac := hmac.New(sha1.New, []byte(wireSecret))
		mac.Write([]byte(strings.ToLower(cs.EncodeValues(p))))
		sdk := base64.StdEncoding.EncodeToString(mac.Sum(nil))
		if strings.Contains(v, "~") {
			assert.NotEqual(t, sdk, signature, v)
		} else {
			assert.Equal(t, sdk, signature, v)
		}
	}
}

// A call that fails in the transport says so without the query string: no
// API key, no signature (and never the secret).
func TestTransportErrorsHoldNoSecret(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there any more
	gw, err := New(Settings{APIURL: srv.URL + "/client/api", APIKey: wireKey, SecretKey: wireSecret})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	for _, call := range []func() error{
		func() error { _, err := gw.Machines(ctx); return err },
		func() error { _, err := gw.DeleteRule(ctx, "lb-1"); return err },
	} {
		err := call()
		require.Error(t, err)
		for _, secret := range []string{wireKey, wireSecret, "signature", "apiKey"} {
			assert.NotContains(t, err.Error(), secret)
		}
	}
}

func wireMachines() []wireCase {
	vms := func(c *cs.CloudStackClient, set func(*cs.ListVirtualMachinesParams)) {
		p := c.VirtualMachine.NewListVirtualMachinesParams()
		p.SetListall(true)
		p.SetDetails([]string{"min", "nics"})
		p.SetProjectid(wireProject)
		set(p)
		_, _ = c.VirtualMachine.ListVirtualMachines(p)
	}
	return []wireCase{
		{"machines", func(ctx context.Context, gw *Client) { _, _ = gw.Machines(ctx) },
			func(c *cs.CloudStackClient) {
				vms(c, func(p *cs.ListVirtualMachinesParams) { p.SetPage(1); p.SetPagesize(pageSize) })
			}},
		{"machine", func(ctx context.Context, gw *Client) { _, _, _ = gw.Machine(ctx, "vm-1") },
			func(c *cs.CloudStackClient) { vms(c, func(p *cs.ListVirtualMachinesParams) { p.SetId("vm-1") }) }},
		{"machinesNamed", func(ctx context.Context, gw *Client) { _, _ = gw.MachinesNamed(ctx, "worker 1") },
			func(c *cs.CloudStackClient) { vms(c, func(p *cs.ListVirtualMachinesParams) { p.SetName("worker 1") }) }},
		{"machinesVisible", func(ctx context.Context, gw *Client) { _, _ = gw.MachinesVisible(ctx) },
			func(c *cs.CloudStackClient) {
				vms(c, func(p *cs.ListVirtualMachinesParams) { p.SetPage(1); p.SetPagesize(1) })
			}},
	}
}

func wireAddresses() []wireCase {
	addresses := func(c *cs.CloudStackClient, set func(*cs.ListPublicIpAddressesParams)) {
		p := c.Address.NewListPublicIpAddressesParams()
		p.SetListall(true)
		p.SetProjectid(wireProject)
		set(p)
		_, _ = c.Address.ListPublicIpAddresses(p)
	}
	return []wireCase{
		{"addressesTagged", func(ctx context.Context, gw *Client) {
			_, _ = gw.AddressesTagged(ctx, map[string]string{"b": "two words", "a": "1/2~*"})
		}, func(c *cs.CloudStackClient) {
			addresses(c, func(p *cs.ListPublicIpAddressesParams) {
				p.SetTags(map[string]string{"b": "two words", "a": "1/2~*"})
				p.SetPage(1)
				p.SetPagesize(pageSize)
			})
		}},
		{"address", func(ctx context.Context, gw *Client) { _, _, _ = gw.Address(ctx, "ip-1") },
			func(c *cs.CloudStackClient) {
				addresses(c, func(p *cs.ListPublicIpAddressesParams) { p.SetId("ip-1") })
			}},
		{"addressOf", func(ctx context.Context, gw *Client) { _, _, _ = gw.AddressOf(ctx, "203.0.113.7") },
			func(c *cs.CloudStackClient) {
				addresses(c, func(p *cs.ListPublicIpAddressesParams) { p.SetIpaddress("203.0.113.7"); p.SetAllocatedonly(false) })
			}},
		{"addressesVisible", func(ctx context.Context, gw *Client) { _, _ = gw.AddressesVisible(ctx) },
			func(c *cs.CloudStackClient) {
				addresses(c, func(p *cs.ListPublicIpAddressesParams) { p.SetPage(1); p.SetPagesize(1) })
			}},
		{"associate to a network", func(ctx context.Context, gw *Client) { _, _, _ = gw.Associate(ctx, Network{ID: "net-1"}, "") },
			func(c *cs.CloudStackClient) {
				p := c.Address.NewAssociateIpAddressParams()
				p.SetNetworkid("net-1")
				p.SetProjectid(wireProject)
				_, _ = c.Address.AssociateIpAddress(p)
			}},
		{"associate to a VPC", func(ctx context.Context, gw *Client) {
			_, _, _ = gw.Associate(ctx, Network{ID: "net-1", VPC: "vpc-1"}, "203.0.113.9")
		}, func(c *cs.CloudStackClient) {
			p := c.Address.NewAssociateIpAddressParams()
			p.SetVpcid("vpc-1")
			p.SetIpaddress("203.0.113.9")
			p.SetProjectid(wireProject)
			_, _ = c.Address.AssociateIpAddress(p)
		}},
		{"disassociate", func(ctx context.Context, gw *Client) { _, _ = gw.Disassociate(ctx, "ip-1") },
			func(c *cs.CloudStackClient) {
				_, _ = c.Address.DisassociateIpAddress(c.Address.NewDisassociateIpAddressParams("ip-1"))
			}},
		{"tag", func(ctx context.Context, gw *Client) {
			_, _ = gw.Tag(ctx, "PublicIpAddress", []string{"ip-1", "ip-2"}, map[string]string{"k2": "v", "k1": "a=b&c"})
		}, func(c *cs.CloudStackClient) {
			_, _ = c.Resourcetags.CreateTags(c.Resourcetags.NewCreateTagsParams([]string{"ip-1", "ip-2"}, "PublicIpAddress",
				map[string]string{"k2": "v", "k1": "a=b&c"}))
		}},
		{"network", func(ctx context.Context, gw *Client) { _, _ = gw.Network(ctx, "net-1") },
			func(c *cs.CloudStackClient) {
				p := c.Network.NewListNetworksParams()
				p.SetId("net-1")
				p.SetListall(true)
				p.SetProjectid(wireProject)
				_, _ = c.Network.ListNetworks(p)
			}},
	}
}

func wireRules() []wireCase {
	rules := func(c *cs.CloudStackClient, set func(*cs.ListLoadBalancerRulesParams)) {
		p := c.LoadBalancer.NewListLoadBalancerRulesParams()
		p.SetListall(true)
		p.SetProjectid(wireProject)
		set(p)
		_, _ = c.LoadBalancer.ListLoadBalancerRules(p)
	}
	r := Rule{Name: "a-tcp-80", Algorithm: "roundrobin", Protocol: "tcp", AddressID: "ip-1", Network: "net-1",
		PublicPort: 80, PrivatePort: 30080, CIDRs: []string{"10.0.0.0/8", "192.0.2.0/24"}}
	return []wireCase{
		{"rules", func(ctx context.Context, gw *Client) { _, _ = gw.Rules(ctx, "svc-uid") },
			func(c *cs.CloudStackClient) {
				rules(c, func(p *cs.ListLoadBalancerRulesParams) {
					p.SetKeyword("svc-uid")
					p.SetPage(1)
					p.SetPagesize(pageSize)
				})
			}},
		{"rulesOn", func(ctx context.Context, gw *Client) { _, _ = gw.RulesOn(ctx, "ip-1") },
			func(c *cs.CloudStackClient) {
				rules(c, func(p *cs.ListLoadBalancerRulesParams) { p.SetPublicipid("ip-1") })
			}},
		{"rulesVisible", func(ctx context.Context, gw *Client) { _, _ = gw.RulesVisible(ctx) },
			func(c *cs.CloudStackClient) {
				rules(c, func(p *cs.ListLoadBalancerRulesParams) { p.SetPage(1); p.SetPagesize(1) })
			}},
		{"createRule", func(ctx context.Context, gw *Client) { _, _, _ = gw.CreateRule(ctx, r) },
			func(c *cs.CloudStackClient) {
				p := c.LoadBalancer.NewCreateLoadBalancerRuleParams(r.Algorithm, r.Name, r.PrivatePort, r.PublicPort)
				p.SetPublicipid(r.AddressID)
				p.SetNetworkid(r.Network)
				p.SetProtocol(r.Protocol)
				p.SetOpenfirewall(false)
				p.SetCidrlist(r.CIDRs)
				_, _ = c.LoadBalancer.CreateLoadBalancerRule(p)
			}},
		{"updateRule", func(ctx context.Context, gw *Client) { _, _ = gw.UpdateRule(ctx, "lb-1", "leastconn") },
			func(c *cs.CloudStackClient) {
				p := c.LoadBalancer.NewUpdateLoadBalancerRuleParams("lb-1")
				p.SetAlgorithm("leastconn")
				_, _ = c.LoadBalancer.UpdateLoadBalancerRule(p)
			}},
		{"deleteRule", func(ctx context.Context, gw *Client) { _, _ = gw.DeleteRule(ctx, "lb-1") },
			func(c *cs.CloudStackClient) {
				_, _ = c.LoadBalancer.DeleteLoadBalancerRule(c.LoadBalancer.NewDeleteLoadBalancerRuleParams("lb-1"))
			}},
	}
}

func wireMembersAndHealthChecks() []wireCase {
	return []wireCase{
		{"ruleMachines", func(ctx context.Context, gw *Client) { _, _ = gw.RuleMachines(ctx, "lb-1") },
			func(c *cs.CloudStackClient) {
				p := c.LoadBalancer.NewListLoadBalancerRuleInstancesParams("lb-1")
				p.SetPage(1)
				p.SetPagesize(pageSize)
				_, _ = c.LoadBalancer.ListLoadBalancerRuleInstances(p)
			}},
		{"assign", func(ctx context.Context, gw *Client) { _, _ = gw.Assign(ctx, "lb-1", []string{"vm-1", "vm-2"}) },
			func(c *cs.CloudStackClient) {
				p := c.LoadBalancer.NewAssignToLoadBalancerRuleParams("lb-1")
				p.SetVirtualmachineids([]string{"vm-1", "vm-2"})
				_, _ = c.LoadBalancer.AssignToLoadBalancerRule(p)
			}},
		{"unassign", func(ctx context.Context, gw *Client) { _, _ = gw.Unassign(ctx, "lb-1", []string{"vm-1"}) },
			func(c *cs.CloudStackClient) {
				p := c.LoadBalancer.NewRemoveFromLoadBalancerRuleParams("lb-1")
				p.SetVirtualmachineids([]string{"vm-1"})
				_, _ = c.LoadBalancer.RemoveFromLoadBalancerRule(p)
			}},
		{"healthChecks", func(ctx context.Context, gw *Client) { _, _ = gw.HealthChecks(ctx, "lb-1") },
			func(c *cs.CloudStackClient) {
				p := c.LoadBalancer.NewListLBHealthCheckPoliciesParams()
				p.SetLbruleid("lb-1")
				_, _ = c.LoadBalancer.ListLBHealthCheckPolicies(p)
			}},
		{"createHealthCheck", func(ctx context.Context, gw *Client) {
			_, _ = gw.CreateHealthCheck(ctx, "lb-1", HealthCheck{Path: "/healthz?x=1", Interval: 5, Timeout: 2, Healthy: 2, Unhealthy: 1})
		}, func(c *cs.CloudStackClient) {
			p := c.LoadBalancer.NewCreateLBHealthCheckPolicyParams("lb-1")
			p.SetPingpath("/healthz?x=1")
			p.SetIntervaltime(5)
			p.SetResponsetimeout(2)
			p.SetHealthythreshold(2)
			p.SetUnhealthythreshold(1)
			_, _ = c.LoadBalancer.CreateLBHealthCheckPolicy(p)
		}},
		{"deleteHealthCheck", func(ctx context.Context, gw *Client) { _, _ = gw.DeleteHealthCheck(ctx, "hc-1") },
			func(c *cs.CloudStackClient) {
				_, _ = c.LoadBalancer.DeleteLBHealthCheckPolicy(c.LoadBalancer.NewDeleteLBHealthCheckPolicyParams("hc-1"))
			}},
	}
}

func wireOpeningsAndJobs() []wireCase {
	o := Opening{Protocol: "tcp", Start: 80, End: 81}
	since := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	return []wireCase{
		{"firewallRules", func(ctx context.Context, gw *Client) { _, _ = gw.FirewallRules(ctx, "ip-1") },
			func(c *cs.CloudStackClient) {
				p := c.Firewall.NewListFirewallRulesParams()
				p.SetIpaddressid("ip-1")
				p.SetListall(true)
				p.SetProjectid(wireProject)
				p.SetPage(1)
				p.SetPagesize(pageSize)
				_, _ = c.Firewall.ListFirewallRules(p)
			}},
		{"createFirewallRule, no CIDRs", func(ctx context.Context, gw *Client) { _, _ = gw.CreateFirewallRule(ctx, "ip-1", o) },
			func(c *cs.CloudStackClient) {
				p := c.Firewall.NewCreateFirewallRuleParams("ip-1", o.Protocol)
				p.SetStartport(o.Start)
				p.SetEndport(o.End)
				p.SetCidrlist(o.CIDRs)
				_, _ = c.Firewall.CreateFirewallRule(p)
			}},
		{"deleteFirewallRule", func(ctx context.Context, gw *Client) { _, _ = gw.DeleteFirewallRule(ctx, "fw-1") },
			func(c *cs.CloudStackClient) {
				_, _ = c.Firewall.DeleteFirewallRule(c.Firewall.NewDeleteFirewallRuleParams("fw-1"))
			}},
		{"aclListName", func(ctx context.Context, gw *Client) { _, _ = gw.ACLListName(ctx, "acl-1") },
			func(c *cs.CloudStackClient) {
				p := c.NetworkACL.NewListNetworkACLListsParams()
				p.SetId("acl-1")
				_, _ = c.NetworkACL.ListNetworkACLLists(p)
			}},
		{"aclItems", func(ctx context.Context, gw *Client) { _, _ = gw.ACLItems(ctx, "acl-1") },
			func(c *cs.CloudStackClient) {
				p := c.NetworkACL.NewListNetworkACLsParams()
				p.SetAclid("acl-1")
				p.SetListall(true)
				p.SetPage(1)
				p.SetPagesize(pageSize)
				_, _ = c.NetworkACL.ListNetworkACLs(p)
			}},
		{"createACLItem", func(ctx context.Context, gw *Client) {
			_, _, _ = gw.CreateACLItem(ctx, "acl-1", Opening{Protocol: "udp", Start: 53, End: 53, CIDRs: []string{"0.0.0.0/0"}, Reason: "overcast-service=u"})
		}, func(c *cs.CloudStackClient) {
			p := c.NetworkACL.NewCreateNetworkACLParams("udp")
			p.SetAclid("acl-1")
			p.SetAction("Allow")
			p.SetTraffictype("Ingress")
			p.SetStartport(53)
			p.SetEndport(53)
			p.SetCidrlist([]string{"0.0.0.0/0"})
			p.SetReason("overcast-service=u")
			_, _ = c.NetworkACL.CreateNetworkACL(p)
		}},
		{"deleteACLItem", func(ctx context.Context, gw *Client) { _, _ = gw.DeleteACLItem(ctx, "item-1") },
			func(c *cs.CloudStackClient) {
				_, _ = c.NetworkACL.DeleteNetworkACL(c.NetworkACL.NewDeleteNetworkACLParams("item-1"))
			}},
		{"jobStatus", func(ctx context.Context, gw *Client) { _, _ = gw.JobStatus(ctx, "job-1") },
			func(c *cs.CloudStackClient) {
				_, _ = c.Asyncjob.QueryAsyncJobResult(c.Asyncjob.NewQueryAsyncJobResultParams("job-1"))
			}},
		{"jobsSince", func(ctx context.Context, gw *Client) { _, _ = gw.JobsSince(ctx, since) },
			func(c *cs.CloudStackClient) {
				p := c.Asyncjob.NewListAsyncJobsParams()
				p.SetStartdate(since.Format(DateLayout))
				p.SetPage(1)
				p.SetPagesize(pageSize)
				_, _ = c.Asyncjob.ListAsyncJobs(p)
			}},
	}
}
