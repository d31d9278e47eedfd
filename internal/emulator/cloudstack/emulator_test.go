package cloudstack

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cs "github.com/apache/cloudstack-go/v2/cloudstack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	"github.com/overcast-ccm/overcast/internal/signature"
)

// started is an emulator of opts serving on loopback for the test.
func started(t *testing.T, opts Options) *Emulator { t.Helper(); return coretest.Start(t, New, opts) }

// client is cloudstack-go's client as the peer builds it (NewAsyncClient).
func client(e *Emulator, key, secret string) *cs.CloudStackClient {
	c := cs.NewAsyncClient(e.URL()+"/client/api", key, secret, false)
	c.AsyncTimeout(30)
	return c
}

func user(e *Emulator) *cs.CloudStackClient  { return client(e, e.fx.UserKey, e.fx.UserSecret) }
func admin(e *Emulator) *cs.CloudStackClient { return client(e, e.fx.AdminKey, e.fx.AdminSecret) }

func TestMachinesAreListedInPagesOfTheServersSize(t *testing.T) {
	e := started(t, Options{MachineCIDR: "10.1.0.0/16"})
	for i := range 1000 {
		e.AddMachine(fmt.Sprintf("node-%04d", i))
	}
	c := user(e)
	p := c.VirtualMachine.NewListVirtualMachinesParams()
	r, err := c.VirtualMachine.ListVirtualMachines(p)
	require.NoError(t, err)
	assert.Equal(t, 1000, r.Count, "count is the total")
	assert.Len(t, r.VirtualMachines, 500, "without paging the server answers default.page.size (the peer's issue #99)")

	seen := map[string]bool{}
	for page := 1; page <= 3; page++ {
		p := c.VirtualMachine.NewListVirtualMachinesParams()
		p.SetPage(page)
		p.SetPagesize(400)
		r, err := c.VirtualMachine.ListVirtualMachines(p)
		require.NoError(t, err)
		assert.Equal(t, 1000, r.Count)
		for _, v := range r.VirtualMachines {
			seen[v.Id] = true
		}
	}
	assert.Len(t, seen, 1000, "three pages of 400 hold all 1,000")

	p = c.VirtualMachine.NewListVirtualMachinesParams()
	p.SetPagesize(100)
	_, err = c.VirtualMachine.ListVirtualMachines(p)
	require.ErrorContains(t, err, "CloudStack API error 431")
	assert.ErrorContains(t, err, `"page" parameter is required when "pagesize" is specified`)
	p = c.VirtualMachine.NewListVirtualMachinesParams()
	p.SetPage(1)
	p.SetPagesize(501)
	_, err = c.VirtualMachine.ListVirtualMachines(p)
	assert.ErrorContains(t, err, "CloudStack API error 431", "a page larger than the server's")
}

func TestAMachineIsFoundByNameAndByID(t *testing.T) {
	e := started(t, Options{})
	id, ip := e.AddMachine("worker-1")
	e.AddMachine("worker-10")
	c := user(e)
	v, n, err := c.VirtualMachine.GetVirtualMachineByName("WORKER-1")
	require.NoError(t, err, "names match exactly, without case (newer servers)")
	assert.Equal(t, 1, n)
	assert.Equal(t, id, v.Id)
	assert.Equal(t, ip, v.Nic[0].Ipaddress)
	assert.Equal(t, e.fx.OfferingName, v.Serviceofferingname)
	assert.Equal(t, e.fx.ZoneName, v.Zonename)
	assert.Empty(t, v.Hostname, "the hypervisor host is a root admin's to see")

	v, n, err = c.VirtualMachine.GetVirtualMachineByID(id)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, "worker-1", v.Name)

	_, n, err = c.VirtualMachine.GetVirtualMachineByID("0b7f0c2e-1111-4222-8333-444455556666")
	require.Error(t, err)
	assert.Equal(t, 0, n, "an id that resolves to nothing is the SDK's 'no match' (431 with the server's text)")
}

func TestAUserNeverSeesDestroyedMachinesAndAnExpungedOneIsNoError(t *testing.T) {
	e := started(t, Options{})
	id, _ := e.AddMachine("gone-1")
	require.NoError(t, e.SetMachineState(id, StateDestroyed))
	_, n, err := user(e).VirtualMachine.GetVirtualMachineByID(id)
	require.Error(t, err)
	assert.Equal(t, 0, n, "hidden from user keys")
	v, n, err := admin(e).VirtualMachine.GetVirtualMachineByID(id)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, StateDestroyed, v.State, "an admin sees it")

	require.NoError(t, e.SetMachineState(id, "Expunged"))
	p := user(e).VirtualMachine.NewListVirtualMachinesParams()
	p.SetId(id)
	r, err := user(e).VirtualMachine.ListVirtualMachines(p)
	require.NoError(t, err, "an expunged machine's id still resolves: an empty list, not an error")
	assert.Equal(t, 0, r.Count)
}

func TestASignatureThatDoesNotVerifyIsRefused(t *testing.T) {
	e := started(t, Options{})
	e.AddMachine("node-1")
	for _, tc := range []struct {
		name string
		c    *cs.CloudStackClient
	}{
		{"a wrong secret", client(e, e.fx.UserKey, "not-the-secret")},
		{"an unknown key", client(e, "no-such-key", e.fx.UserSecret)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.c.VirtualMachine.ListVirtualMachines(tc.c.VirtualMachine.NewListVirtualMachinesParams())
			require.ErrorContains(t, err, "CloudStack API error 401")
			assert.ErrorContains(t, err, "unable to verify user credentials and/or request signature")
			assoc := tc.c.Address.NewAssociateIpAddressParams()
			assoc.SetNetworkid(e.fx.NetworkID)
			_, err = tc.c.Address.AssociateIpAddress(assoc)
			assert.ErrorContains(t, err, "CloudStack API error 401", "a POST is checked as a GET is")
		})
	}

	signed := func(expires time.Time, tamper func(url.Values)) int {
		p := url.Values{"command": {"listZones"}, "apiKey": {e.fx.UserKey}, "response": {"json"},
			"signatureversion": {"3"}, "expires": {expires.UTC().Format(time.RFC3339)}}
		p.Set("signature", Sign(p, e.fx.UserSecret))
		if tamper != nil {
			tamper(p)
		}
		resp, err := http.Get(e.URL() + "/client/api?" + p.Encode())
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, signed(time.Now().Add(time.Minute), nil))
	assert.Equal(t, http.StatusUnauthorized, signed(time.Now().Add(-time.Minute), nil), "expired")
	assert.Equal(t, http.StatusUnauthorized, signed(time.Now().Add(time.Minute), func(p url.Values) { p.Del("expires") }), "expires is mandatory with signatureversion=3")
	assert.Equal(t, http.StatusUnauthorized, signed(time.Now().Add(time.Minute), func(p url.Values) { p.Set("command", "listProjects") }), "a parameter changed after signing")
}

func TestTheServersSignatureIsTheClientLibrarys(t *testing.T) {
	// Values with every character class the SDK and the server encode: the
	// two agree on all but '~', which Java escapes and Go does not.
	p := url.Values{"name": {"a b*c_d.e-f+g/h=i&j%k"}, "Upper": {"X"}, "apiKey": {"k"}}
	assert.Equal(t, strings.ToLower(cs.EncodeValues(p)), strings.ToLower(signature.CloudStackQuery(p)))
}

func TestUserKeysAreRefusedAdminOnlyCommands(t *testing.T) {
	e := started(t, Options{})
	_, err := user(e).Management.ListManagementServersMetrics(user(e).Management.NewListManagementServersMetricsParams())
	require.ErrorContains(t, err, "CloudStack API error 432")
	assert.ErrorContains(t, err, "The API [listManagementServersMetrics] does not exist or is not available for the account")
	r, err := admin(e).Management.ListManagementServersMetrics(admin(e).Management.NewListManagementServersMetricsParams())
	require.NoError(t, err)
	assert.Equal(t, Version, r.ManagementServersMetrics[0].Version)
	caps, err := user(e).Configuration.ListCapabilities(user(e).Configuration.NewListCapabilitiesParams())
	require.NoError(t, err, "what a user may ask")
	require.NotNil(t, caps.Capabilities)
	assert.Equal(t, Version, caps.Capabilities.Cloudstackversion)
}

func TestAsynchronousJobsFinishAfterTheirDelay(t *testing.T) {
	e := started(t, Options{JobDelay: 1500 * time.Millisecond})
	c := user(e)
	p := c.Address.NewAssociateIpAddressParams()
	p.SetNetworkid(e.fx.NetworkID)
	start := time.Now()
	ip, err := c.Address.AssociateIpAddress(p)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond, "the async client polled until the job was done")
	assert.NotEmpty(t, ip.Ipaddress)
	assert.Equal(t, "Allocated", ip.State)
	assert.NotEmpty(t, ip.Allocated)

	// The plain client gets the job, and sees it pending until it is done.
	plain := cs.NewClient(e.URL()+"/client/api", e.fx.UserKey, e.fx.UserSecret, false)
	d := plain.Address.NewDisassociateIpAddressParams(ip.Id)
	dr, err := plain.Address.DisassociateIpAddress(d)
	require.NoError(t, err)
	require.NotEmpty(t, dr.JobID)
	q, err := plain.Asyncjob.QueryAsyncJobResult(plain.Asyncjob.NewQueryAsyncJobResultParams(dr.JobID))
	require.NoError(t, err)
	assert.Equal(t, 0, q.Jobstatus)
	require.Eventually(t, func() bool {
		q, err := plain.Asyncjob.QueryAsyncJobResult(plain.Asyncjob.NewQueryAsyncJobResultParams(dr.JobID))
		return err == nil && q.Jobstatus == 1
	}, 10*time.Second, 100*time.Millisecond)
	l, err := c.Address.ListPublicIpAddresses(c.Address.NewListPublicIpAddressesParams())
	require.NoError(t, err)
	assert.Equal(t, 0, l.Count, "released")

	// listAsyncJobs: the caller's own jobs since startdate, with their status.
	lp := plain.Asyncjob.NewListAsyncJobsParams()
	lp.SetStartdate(start.Add(-time.Minute).UTC().Format("2006-01-02T15:04:05-0700"))
	jobs, err := plain.Asyncjob.ListAsyncJobs(lp)
	require.NoError(t, err)
	require.Equal(t, 2, jobs.Count, "the association and the release")
	for _, j := range jobs.AsyncJobs {
		assert.Equal(t, 1, j.Jobstatus)
		assert.Equal(t, e.fx.AccountID, j.Accountid)
	}
	lp.SetStartdate(time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05-0700"))
	jobs, err = plain.Asyncjob.ListAsyncJobs(lp)
	require.NoError(t, err)
	assert.Zero(t, jobs.Count, "none since a later date")
	aj, err := admin(e).Asyncjob.ListAsyncJobs(admin(e).Asyncjob.NewListAsyncJobsParams())
	require.NoError(t, err)
	assert.Zero(t, aj.Count, "another account's jobs are not listed")
}

func TestAnInjectedFaultIsAnErrorOfItsCode(t *testing.T) {
	e := started(t, Options{})
	e.InjectFault(core.Fault{Route: "GET listVirtualMachines", Status: 530, Count: 1})
	c := user(e)
	_, err := c.VirtualMachine.ListVirtualMachines(c.VirtualMachine.NewListVirtualMachinesParams())
	require.ErrorContains(t, err, "CloudStack API error 530", "cloudstack-go takes any 200 for success: the code must be the status")
	_, err = c.VirtualMachine.ListVirtualMachines(c.VirtualMachine.NewListVirtualMachinesParams())
	require.NoError(t, err)
	var ops []string
	for _, call := range e.Calls() {
		ops = append(ops, fmt.Sprintf("%s %d", call.Route, call.Code))
	}
	assert.Equal(t, []string{"GET listVirtualMachines 200", "GET listVirtualMachines 530"}, ops, "calls are counted by command, as cloudapi's metrics name them")
}

// cloudstack-go sends its writes by POST with the command and the signature
// in a form body (PostForm), which ApiServlet takes as it takes a query: such
// a call is counted, and faults match it, by its command, and its body still
// reaches the API (the signature checks out).
func TestAPostedCommandIsCountedAndFaultedByItsCommand(t *testing.T) {
	e := started(t, Options{})
	e.InjectFault(core.Fault{Route: "POST disassociateIpAddress", Status: 530})
	e.InjectFault(core.Fault{Route: "POST associateIpAddress", Status: 530, Count: 1})
	c := user(e)
	p := c.Address.NewAssociateIpAddressParams()
	p.SetNetworkid(e.fx.NetworkID)
	_, err := c.Address.AssociateIpAddress(p)
	require.ErrorContains(t, err, "CloudStack API error 530", "the fault aimed at the command fires")
	ip := associate(t, e, c, "")
	_, err = c.Address.DisassociateIpAddress(c.Address.NewDisassociateIpAddressParams(ip.Id))
	require.ErrorContains(t, err, "CloudStack API error 530")

	posted := map[string]int{}
	for _, call := range e.Calls() {
		if call.Method == http.MethodPost {
			posted[fmt.Sprintf("%s %d", call.Route, call.Code)] += call.Count
		}
	}
	assert.Equal(t, map[string]int{
		"POST associateIpAddress 530": 1, "POST associateIpAddress 200": 1, "POST disassociateIpAddress 530": 1,
	}, posted, "POSTed calls are counted by command")
}

// A form body of any size is counted by its command (which cloudstack-go
// encodes among the first parameters), and reaches the API whole.
func TestALargeFormBodyIsCountedByItsCommandAndServedWhole(t *testing.T) {
	e := started(t, Options{})
	p := url.Values{"command": {"listZones"}, "apiKey": {e.fx.UserKey}, "response": {"json"},
		"keyword": {strings.Repeat("z", 100<<10)}}
	p.Set("signature", Sign(p, e.fx.UserSecret))
	resp, err := http.Post(e.URL()+"/client/api", "application/x-www-form-urlencoded", strings.NewReader(p.Encode()))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the signature of the whole body checks out")
	require.Len(t, e.Calls(), 1)
	assert.Equal(t, "POST listZones", e.Calls()[0].Route)
}

// A POST's parameters are the query's, then the form body's, as the servlet
// container hands them to ApiServlet: a command in both is the query's, for
// the API as for the counts and the faults.
func TestAPostsQueryComesBeforeItsFormBody(t *testing.T) {
	e := started(t, Options{})
	e.InjectFault(core.Fault{Route: "POST listVirtualMachines", Status: 530})
	p := url.Values{"command": {"listZones", "listVirtualMachines"}, "apiKey": {e.fx.UserKey}, "response": {"json"}}
	sig := Sign(p, e.fx.UserSecret)
	body := url.Values{"command": {"listVirtualMachines"}, "apiKey": {e.fx.UserKey}, "response": {"json"}, "signature": {sig}}
	resp, err := http.Post(e.URL()+"/client/api?command=listZones", "application/x-www-form-urlencoded", strings.NewReader(body.Encode()))
	require.NoError(t, err)
	defer resp.Body.Close()
	var env map[string]json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
	assert.Equal(t, http.StatusOK, resp.StatusCode, "signed as the server orders the values: %s", env)
	assert.Contains(t, env, "listzonesresponse")
	require.Len(t, e.Calls(), 1)
	assert.Equal(t, "POST listZones", e.Calls()[0].Route)
}

// The emulator's answers decode into cloudstack-go's types with no field
// unknown to them, and their keys are the recorded answers' keys but for
// those listed here.
func TestAnswersHaveTheRecordedShape(t *testing.T) {
	e := started(t, Options{InProject: true})
	e.AddMachine("node-1")
	raw := func(p url.Values, key, secret string) []byte {
		p.Set("apiKey", key)
		p.Set("response", "json")
		p.Set("signatureversion", "3")
		p.Set("expires", time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
		p.Set("signature", Sign(p, secret))
		resp, err := http.Get(e.URL() + "/client/api?" + p.Encode())
		require.NoError(t, err)
		defer resp.Body.Close()
		var env map[string]json.RawMessage
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
		require.Len(t, env, 1, "exactly one top-level key")
		for _, v := range env {
			return v
		}
		return nil
	}
	body := raw(url.Values{"command": {"listVirtualMachines"}, "projectid": {e.fx.ProjectID}}, e.fx.AdminKey, e.fx.AdminSecret)
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	var typed cs.ListVirtualMachinesResponse
	require.NoError(t, dec.Decode(&typed), "no field cloudstack-go does not know")
	require.Equal(t, 1, typed.Count)

	var ours struct {
		VirtualMachine []map[string]any `json:"virtualmachine"`
	}
	require.NoError(t, json.Unmarshal(body, &ours))
	recorded := recordedVM(t)
	notEmulated := []string{"cpuused", "diskioread", "diskiowrite", "diskkbsread", "diskkbswrite", "memoryintfreekbs", "memorykbs", "memorytargetkbs", "networkkbsread", "networkkbswrite"}
	projectOnly := []string{"project", "projectid"}
	var missing, extra []string
	for k := range recorded {
		if _, ok := ours.VirtualMachine[0][k]; !ok && !slices.Contains(notEmulated, k) {
			missing = append(missing, k)
		}
	}
	for k := range ours.VirtualMachine[0] {
		if _, ok := recorded[k]; !ok && !slices.Contains(projectOnly, k) {
			extra = append(extra, k)
		}
	}
	assert.Empty(t, missing, "keys of the recording the emulator lacks")
	assert.Empty(t, extra, "keys the emulator has that the recording lacks")

	empty := raw(url.Values{"command": {"listPublicIpAddresses"}}, e.fx.UserKey, e.fx.UserSecret)
	assert.JSONEq(t, `{}`, string(empty), "an empty list is an empty object")
}

// recordedVM is the virtual machine of cloudstack-go's recorded
// listVirtualMachines answer (test/testdata/VirtualMachineService.json).
func recordedVM(t *testing.T) map[string]any {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/apache/cloudstack-go/v2").Output()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "test", "testdata", "VirtualMachineService.json"))
	require.NoError(t, err)
	var rec map[string]map[string]struct {
		VirtualMachine []map[string]any `json:"virtualmachine"`
	}
	require.NoError(t, json.Unmarshal(data, &rec))
	vms := rec["listVirtualMachines"]["listVirtualMachines"].VirtualMachine
	require.NotEmpty(t, vms, "keys %v", slices.Collect(maps.Keys(rec)))
	return vms[0]
}

// The rules the peer makes: one per Service port named <lb>-<proto>-<port>,
// TCP and UDP on one port side by side, machines assigned and listed, found
// by keyword (the server's LIKE, so a longer name matches too) or by exact
// name, and deleted.
func TestLoadBalancerRulesAsThePeerDrivesThem(t *testing.T) {
	e := started(t, Options{})
	m1, _ := e.AddMachine("node-1")
	m2, _ := e.AddMachine("node-2")
	c := user(e)
	assoc := c.Address.NewAssociateIpAddressParams()
	assoc.SetNetworkid(e.fx.NetworkID)
	ip, err := c.Address.AssociateIpAddress(assoc)
	require.NoError(t, err)

	create := func(name, proto string, port int) (*cs.CreateLoadBalancerRuleResponse, error) {
		p := c.LoadBalancer.NewCreateLoadBalancerRuleParams("roundrobin", name, 30000+port, port)
		p.SetPublicipid(ip.Id)
		p.SetNetworkid(e.fx.NetworkID)
		p.SetProtocol(proto)
		p.SetOpenfirewall(false)
		p.SetCidrlist([]string{"10.0.0.0/8", "192.168.0.0/16"})
		return c.LoadBalancer.CreateLoadBalancerRule(p)
	}
	const lb = "a3f1e2d4c5b6a7980112233445566778"
	tcp, err := create(lb+"-tcp-53", "tcp", 53)
	require.NoError(t, err)
	assert.Equal(t, "53", tcp.Publicport, "ports are strings")
	assert.Equal(t, ip.Ipaddress, tcp.Publicip)
	assert.Equal(t, "10.0.0.0/8 192.168.0.0/16", tcp.Cidrlist, "the cidrlist comes back space-separated")
	_, err = create(lb+"-udp-53", "udp", 53)
	require.NoError(t, err, "UDP on the TCP rule's port")
	_, err = create(lb+"-tcp-proxy-53", "tcp-proxy", 53)
	require.ErrorContains(t, err, "CloudStack API error 537", "tcp-proxy is TCP: a conflict")
	_, err = create(lb+"x-tcp-80", "tcp", 80)
	require.NoError(t, err)

	assign := c.LoadBalancer.NewAssignToLoadBalancerRuleParams(tcp.Id)
	assign.SetVirtualmachineids([]string{m1, m2})
	_, err = c.LoadBalancer.AssignToLoadBalancerRule(assign)
	require.NoError(t, err)
	inst, err := c.LoadBalancer.ListLoadBalancerRuleInstances(c.LoadBalancer.NewListLoadBalancerRuleInstancesParams(tcp.Id))
	require.NoError(t, err)
	require.Equal(t, 2, inst.Count)
	assert.ElementsMatch(t, []string{m1, m2}, []string{inst.LoadBalancerRuleInstances[0].Id, inst.LoadBalancerRuleInstances[1].Id})
	remove := c.LoadBalancer.NewRemoveFromLoadBalancerRuleParams(tcp.Id)
	remove.SetVirtualmachineids([]string{m2})
	_, err = c.LoadBalancer.RemoveFromLoadBalancerRule(remove)
	require.NoError(t, err)
	inst, err = c.LoadBalancer.ListLoadBalancerRuleInstances(c.LoadBalancer.NewListLoadBalancerRuleInstancesParams(tcp.Id))
	require.NoError(t, err)
	assert.Equal(t, 1, inst.Count)

	byKeyword := c.LoadBalancer.NewListLoadBalancerRulesParams()
	byKeyword.SetKeyword(lb)
	byKeyword.SetListall(true)
	rules, err := c.LoadBalancer.ListLoadBalancerRules(byKeyword)
	require.NoError(t, err)
	assert.Equal(t, 3, rules.Count, "the keyword is LIKE %kw%: another Service's longer name matches too (the peer's fuzzy search)")
	byName := c.LoadBalancer.NewListLoadBalancerRulesParams()
	byName.SetName(lb + "-udp-53")
	rules, err = c.LoadBalancer.ListLoadBalancerRules(byName)
	require.NoError(t, err)
	require.Equal(t, 1, rules.Count, "a name is exact")
	assert.Equal(t, "udp", rules.LoadBalancerRules[0].Protocol)
	assert.Equal(t, "Active", rules.LoadBalancerRules[0].State)

	update := c.LoadBalancer.NewUpdateLoadBalancerRuleParams(tcp.Id)
	update.SetAlgorithm("source")
	updated, err := c.LoadBalancer.UpdateLoadBalancerRule(update)
	require.NoError(t, err)
	assert.Equal(t, "source", updated.Algorithm)

	_, err = c.LoadBalancer.DeleteLoadBalancerRule(c.LoadBalancer.NewDeleteLoadBalancerRuleParams(tcp.Id))
	require.NoError(t, err)
	_, n, err := c.LoadBalancer.GetLoadBalancerRuleByID(tcp.Id)
	require.Error(t, err)
	assert.Equal(t, 0, n, "gone")
}

func associate(t *testing.T, e *Emulator, c *cs.CloudStackClient, addr string) *cs.AssociateIpAddressResponse {
	t.Helper()
	return associateIn(t, e, c, addr, "")
}

// webRule creates the round-robin rule name of ip's port to node port
// 30000+port, through the SDK; its id.
func webRule(t *testing.T, e *Emulator, c *cs.CloudStackClient, ip *cs.AssociateIpAddressResponse, name string, port int) string {
	t.Helper()
	p := c.LoadBalancer.NewCreateLoadBalancerRuleParams("roundrobin", name, 30000+port, port)
	p.SetPublicipid(ip.Id)
	p.SetNetworkid(e.fx.NetworkID)
	r, err := c.LoadBalancer.CreateLoadBalancerRule(p)
	require.NoError(t, err)
	return r.Id
}

// associateIn is associate in a project ("" for the account).
func associateIn(t *testing.T, e *Emulator, c *cs.CloudStackClient, addr, project string) *cs.AssociateIpAddressResponse {
	t.Helper()
	p := c.Address.NewAssociateIpAddressParams()
	p.SetNetworkid(e.fx.NetworkID)
	if addr != "" {
		p.SetIpaddress(addr)
	}
	if project != "" {
		p.SetProjectid(project)
	}
	ip, err := c.Address.AssociateIpAddress(p)
	require.NoError(t, err)
	return ip
}

// An isolated network filters with firewall rules (ports as numbers, CIDRs
// comma-separated), a VPC tier with network ACL items (ports as strings):
// the peer picks the path by the network's services.
func TestTheNetworkSaysWhetherFirewallRulesOrACLsFilter(t *testing.T) {
	t.Run("isolated network: firewall rules", func(t *testing.T) {
		e := started(t, Options{})
		c := user(e)
		n, _, err := c.Network.GetNetworkByID(e.fx.NetworkID)
		require.NoError(t, err)
		var services []string
		for _, s := range n.Service {
			services = append(services, s.Name)
		}
		assert.Contains(t, services, "Firewall")
		assert.NotContains(t, services, "NetworkACL")
		assert.Empty(t, n.Vpcid)

		ip := associate(t, e, c, "")
		p := c.Firewall.NewCreateFirewallRuleParams(ip.Id, "tcp")
		p.SetStartport(443)
		p.SetEndport(443)
		p.SetCidrlist([]string{"10.0.0.0/8", "192.168.1.0/24"})
		_, err = c.Firewall.CreateFirewallRule(p)
		require.NoError(t, err)
		l := c.Firewall.NewListFirewallRulesParams()
		l.SetIpaddressid(ip.Id)
		rules, err := c.Firewall.ListFirewallRules(l)
		require.NoError(t, err)
		require.Equal(t, 1, rules.Count)
		assert.Equal(t, 443, rules.FirewallRules[0].Startport)
		assert.Equal(t, "10.0.0.0/8,192.168.1.0/24", rules.FirewallRules[0].Cidrlist)
		_, err = c.Firewall.DeleteFirewallRule(c.Firewall.NewDeleteFirewallRuleParams(rules.FirewallRules[0].Id))
		require.NoError(t, err)
		rules, err = c.Firewall.ListFirewallRules(l)
		require.NoError(t, err)
		assert.Equal(t, 0, rules.Count)
	})
	t.Run("VPC tier: network ACLs", func(t *testing.T) {
		e := started(t, Options{VPC: true})
		c := user(e)
		n, _, err := c.Network.GetNetworkByID(e.fx.NetworkID)
		require.NoError(t, err)
		assert.Equal(t, e.fx.VPCID, n.Vpcid)
		assert.Equal(t, e.fx.ACLListID, n.Aclid)
		ip := associate(t, e, c, "")
		_, err = c.Firewall.CreateFirewallRule(c.Firewall.NewCreateFirewallRuleParams(ip.Id, "tcp"))
		require.ErrorContains(t, err, "CloudStack API error 431", "no firewall service in a VPC tier")

		lists, err := c.NetworkACL.ListNetworkACLLists(func() *cs.ListNetworkACLListsParams {
			p := c.NetworkACL.NewListNetworkACLListsParams()
			p.SetId(n.Aclid)
			return p
		}())
		require.NoError(t, err)
		require.Equal(t, 1, lists.Count)
		assert.NotContains(t, []string{"default_allow", "default_deny"}, lists.NetworkACLLists[0].Name, "a list of the cluster's own")

		acl := func(proto string) error {
			p := c.NetworkACL.NewCreateNetworkACLParams(proto)
			p.SetAclid(n.Aclid)
			p.SetNetworkid(n.Id)
			p.SetAction("Allow")
			p.SetTraffictype("Ingress")
			p.SetCidrlist([]string{"0.0.0.0/0"})
			p.SetStartport(8443)
			p.SetEndport(8443)
			_, err := c.NetworkACL.CreateNetworkACL(p)
			return err
		}
		require.NoError(t, acl("tcp"))
		require.ErrorContains(t, acl("tcp-proxy"), "CloudStack API error 431", "the peer's tcp-proxy ACL is refused (its latent bug)")
		l := c.NetworkACL.NewListNetworkACLsParams()
		l.SetAclid(n.Aclid)
		l.SetNetworkid(n.Id)
		items, err := c.NetworkACL.ListNetworkACLs(l)
		require.NoError(t, err)
		require.Equal(t, 1, items.Count)
		assert.Equal(t, "8443", items.NetworkACLs[0].Startport, "ACL ports are strings")
		_, err = c.NetworkACL.DeleteNetworkACL(c.NetworkACL.NewDeleteNetworkACLParams(items.NetworkACLs[0].Id))
		require.NoError(t, err)
	})
}

// Ownership by tags: a rule and an address tagged with the cluster's and the
// Service's UIDs are found by those tags, and nothing else is.
func TestResourcesAreFoundByTheirTags(t *testing.T) {
	e := started(t, Options{})
	c := user(e)
	ip := associate(t, e, c, "")
	mine := map[string]string{"overcast-cluster-uid": "c-1", "overcast-service-uid": "s-1"}
	ours, theirs := webRule(t, e, c, ip, "ours-tcp-80", 80), webRule(t, e, c, ip, "theirs-tcp-81", 81)
	_, err := c.Resourcetags.CreateTags(c.Resourcetags.NewCreateTagsParams([]string{ours}, "LoadBalancer", mine))
	require.NoError(t, err)
	_, err = c.Resourcetags.CreateTags(c.Resourcetags.NewCreateTagsParams([]string{theirs}, "LoadBalancer", map[string]string{"overcast-cluster-uid": "c-2"}))
	require.NoError(t, err)
	_, err = c.Resourcetags.CreateTags(c.Resourcetags.NewCreateTagsParams([]string{ip.Id}, "PublicIpAddress", mine))
	require.NoError(t, err)

	l := c.LoadBalancer.NewListLoadBalancerRulesParams()
	l.SetTags(mine)
	rules, err := c.LoadBalancer.ListLoadBalancerRules(l)
	require.NoError(t, err)
	require.Equal(t, 1, rules.Count)
	assert.Equal(t, ours, rules.LoadBalancerRules[0].Id)
	assert.Len(t, rules.LoadBalancerRules[0].Tags, 2, "a rule carries its tags")
	ips := c.Address.NewListPublicIpAddressesParams()
	ips.SetTags(mine)
	addrs, err := c.Address.ListPublicIpAddresses(ips)
	require.NoError(t, err)
	assert.Equal(t, 1, addrs.Count)

	_, err = c.Resourcetags.CreateTags(c.Resourcetags.NewCreateTagsParams([]string{ours}, "LoadBalancer", mine))
	require.ErrorContains(t, err, "CloudStack API error 431", "a key once per resource")

	_, err = c.LoadBalancer.DeleteLoadBalancerRule(c.LoadBalancer.NewDeleteLoadBalancerRuleParams(ours))
	require.NoError(t, err)
	lt := c.Resourcetags.NewListTagsParams()
	lt.SetResourceid(ours)
	tags, err := c.Resourcetags.ListTags(lt)
	require.NoError(t, err)
	assert.Equal(t, 0, tags.Count, "a deleted resource's tags go with it")
}

// A requested address: listed as Free (no allocated date) until it is
// associated, as the peer checks before it asks for it.
func TestARequestedAddressIsFreeUntilAssociated(t *testing.T) {
	e := started(t, Options{})
	c := user(e)
	lookup := func() *cs.PublicIpAddress {
		p := c.Address.NewListPublicIpAddressesParams()
		p.SetIpaddress("203.0.113.77")
		p.SetAllocatedonly(false)
		p.SetListall(true)
		r, err := c.Address.ListPublicIpAddresses(p)
		require.NoError(t, err)
		require.Equal(t, 1, r.Count)
		return r.PublicIpAddresses[0]
	}
	free := lookup()
	assert.Empty(t, free.Allocated)
	assert.Equal(t, "Free", free.State)
	ip := associate(t, e, c, "203.0.113.77")
	assert.Equal(t, free.Id, ip.Id, "the address keeps its id")
	assert.NotEmpty(t, lookup().Allocated)
	p := c.Address.NewAssociateIpAddressParams()
	p.SetNetworkid(e.fx.NetworkID)
	p.SetIpaddress("203.0.113.77")
	_, err := c.Address.AssociateIpAddress(p)
	assert.ErrorContains(t, err, "CloudStack API error 431", "taken")
}

func TestAHealthCheckPolicyPerRule(t *testing.T) {
	e := started(t, Options{})
	c := user(e)
	ip := associate(t, e, c, "")
	ruleID := webRule(t, e, c, ip, "web-tcp-80", 80)

	bad := c.LoadBalancer.NewCreateLBHealthCheckPolicyParams(ruleID)
	bad.SetResponsetimeout(61)
	_, err := c.LoadBalancer.CreateLBHealthCheckPolicy(bad)
	require.ErrorContains(t, err, "CloudStack API error 430", "a response timeout beyond 60 s")

	hc := c.LoadBalancer.NewCreateLBHealthCheckPolicyParams(ruleID)
	hc.SetPingpath("/healthz")
	hc.SetIntervaltime(10)
	hc.SetResponsetimeout(3)
	created, err := c.LoadBalancer.CreateLBHealthCheckPolicy(hc)
	require.NoError(t, err)
	require.Len(t, created.Healthcheckpolicy, 1)
	assert.Equal(t, ruleID, created.Lbruleid)
	assert.Equal(t, "/healthz", created.Healthcheckpolicy[0].Pingpath)
	assert.Equal(t, 10, created.Healthcheckpolicy[0].Healthcheckinterval)
	assert.Equal(t, 2, created.Healthcheckpolicy[0].Healthcheckthresshold, "the server's default")
	_, err = c.LoadBalancer.CreateLBHealthCheckPolicy(c.LoadBalancer.NewCreateLBHealthCheckPolicyParams(ruleID))
	require.ErrorContains(t, err, "CloudStack API error 431", "one policy per rule")

	l := c.LoadBalancer.NewListLBHealthCheckPoliciesParams()
	l.SetLbruleid(ruleID)
	list, err := c.LoadBalancer.ListLBHealthCheckPolicies(l)
	require.NoError(t, err)
	require.Equal(t, 1, list.Count)
	_, err = c.LoadBalancer.DeleteLBHealthCheckPolicy(c.LoadBalancer.NewDeleteLBHealthCheckPolicyParams(created.Healthcheckpolicy[0].Id))
	require.NoError(t, err)
	list, err = c.LoadBalancer.ListLBHealthCheckPolicies(l)
	require.NoError(t, err)
	assert.Equal(t, 0, list.Count)
}

// Firewall rules are listed in the caller's scope, as load balancer rules
// are: a project's with projectid, the account's own without.
func TestFirewallRulesAreListedInTheirScope(t *testing.T) {
	e := started(t, Options{})
	c := user(e)
	open := func(project string) string {
		addr := associateIn(t, e, c, "", project)
		fp := c.Firewall.NewCreateFirewallRuleParams(addr.Id, "tcp")
		fp.SetStartport(80)
		fp.SetEndport(80)
		f, err := c.Firewall.CreateFirewallRule(fp)
		require.NoError(t, err)
		return f.Id
	}
	own, inProject := open(""), open(e.fx.ProjectID)
	list := func(project string) []string {
		p := c.Firewall.NewListFirewallRulesParams()
		p.SetListall(true)
		if project != "" {
			p.SetProjectid(project)
		}
		r, err := c.Firewall.ListFirewallRules(p)
		require.NoError(t, err)
		var ids []string
		for _, f := range r.FirewallRules {
			ids = append(ids, f.Id)
		}
		return ids
	}
	assert.Equal(t, []string{own}, list(""))
	assert.Equal(t, []string{inProject}, list(e.fx.ProjectID))
	assert.Equal(t, []string{inProject}, list("-1"))
}

// A public range is used up only when every address is taken: one released
// is given again (the server picks any Free address of the range).
func TestReleasedPublicAddressesAreGivenAgain(t *testing.T) {
	e := started(t, Options{PublicCIDR: "127.0.78.0/28"})
	c := user(e)
	associate := func() (*cs.AssociateIpAddressResponse, error) {
		p := c.Address.NewAssociateIpAddressParams()
		p.SetNetworkid(e.fx.NetworkID)
		return c.Address.AssociateIpAddress(p)
	}
	var got []*cs.AssociateIpAddressResponse
	for range 20 {
		ip, err := associate()
		if err != nil {
			require.ErrorContains(t, err, "Insufficient address capacity")
			break
		}
		got = append(got, ip)
	}
	require.NotEmpty(t, got)
	require.Less(t, len(got), 16, "a /28 has at most 15 addresses")
	_, err := c.Address.DisassociateIpAddress(c.Address.NewDisassociateIpAddressParams(got[0].Id))
	require.NoError(t, err)
	again, err := associate()
	require.NoError(t, err, "the released address is free again")
	assert.Equal(t, got[0].Ipaddress, again.Ipaddress)
	_, err = associate()
	require.ErrorContains(t, err, "Insufficient address capacity")
}
