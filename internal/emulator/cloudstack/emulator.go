// Package cloudstack is an in-memory Apache CloudStack management server API
// (/client/api) for tests, the bench and `overcast emulate cloudstack`, reached
// through the real client library (cloudstack-go) in its tests, and by
// overcast-ccm's own client (internal/provider/cloudstack, held to
// cloudstack-go's requests byte for byte). It runs on the emulator core
// (internal/emulator/core): latency, faults, calls counted by command,
// /_emulator.
//
// Held to the real server (sources in ../shared/facts/cloudstack-api.md §1–2,
// and the recorded responses of cloudstack-go's test/testdata): request
// signatures checked as ApiServer.verifyRequest checks them (401 otherwise),
// one "<command>response" envelope per answer, errors with their code as the
// HTTP status (cloudstack-go takes a 200 for success whatever the body), list
// answers with the total count and default.page.size paging, asynchronous
// commands answered with a job polled through queryAsyncJobResult, admin-only
// commands refused to user keys (432), and Destroyed or Expunging machines
// hidden from user keys.
//
// It serves zones, projects, virtual machines, the guest network (isolated,
// or a VPC tier), public IP addresses, load balancer rules and their machines,
// firewall rules, network ACLs and tags (changes as asynchronous jobs), jobs,
// and the version commands. Health-check and stickiness policies come with the
// provider that needs them.
package cloudstack

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/overcast-ccm/overcast/internal/cloudapi"
	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Version is the management server version the emulator answers with.
const Version = "4.20.1.0"

// Options of an Emulator; the zero value is usable.
type Options struct {
	// Latency is added to every API call.
	Latency time.Duration
	// JobDelay is how long asynchronous jobs take; 0: done by the first poll.
	JobDelay time.Duration
	// Seed seeds the ids and the random faults.
	Seed int64
	// MachineCIDR is the guest network's CIDR, where machines' NIC addresses
	// come from; default 10.1.1.0/24.
	MachineCIDR string
	// PublicCIDR is where public IP addresses come from (from its 10th
	// address on); default 203.0.113.0/24.
	PublicCIDR string
	// PageSize is the server's default.page.size; default 500.
	PageSize int
	// InProject puts the machines and addresses in the fixture's project
	// (listed with projectid), as for clusters deployed in a project.
	InProject bool
	// VPC makes the guest network a VPC tier: network ACLs instead of
	// firewall rules.
	VPC bool
	// ServeTraffic makes load balancer rules carry traffic (dataplane.go);
	// MachineCIDR and PublicCIDR must then be loopback prefixes.
	ServeTraffic bool
}

// Fixture is what the emulator starts with: two accounts' keys (an admin and
// a user, the kind CloudStack gives CKS clusters), a zone, a project, a guest
// network and a service offering.
type Fixture struct {
	AdminKey, AdminSecret    string
	UserKey, UserSecret      string
	AccountName, AccountID   string
	UserID, DomainID         string
	ZoneID, ZoneName         string
	ProjectID, ProjectName   string
	NetworkID, NetworkName   string
	VPCID, ACLListID         string
	OfferingID, OfferingName string
}

type account struct {
	name, id, userID, secret string
	admin                    bool
}

// Emulator is an in-memory CloudStack. It is an http.Handler (through its
// core.Server) and listens by itself with Start.
type Emulator struct {
	*core.Server
	opts Options
	fx   Fixture

	mu           sync.Mutex
	clock        func() time.Time
	idRand       *rand.Rand
	seq          int
	keys         map[string]*account
	vms          *core.Store[*vm]
	ips          *core.Store[*publicIP]
	rules        *core.Store[*lbRule]
	firewall     []*firewallRule
	acl          []*aclItem
	tags         []*tag
	healthChecks []*healthCheck
	cmds         map[string]command // the commands served, built once
	freeIPs      map[string]string  // address → id of a public address not allocated
	jobs         *core.Jobs
	jobDelay     core.Delay // of jobs (Options.JobDelay)
	jobMeta      map[string]jobMeta

	dataPlane             core.DataPlane
	machineNet, publicNet netip.Prefix
	machineNext           netip.Addr
	publicNext            netip.Addr
}

// New returns an emulator with its Fixture.
func New(opts Options) (*Emulator, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	nets, err := core.ParseNetworks("cloudstack emulator", opts.MachineCIDR, opts.PublicCIDR, "10.1.1.0/24", "203.0.113.0/24", opts.ServeTraffic)
	if err != nil {
		return nil, err
	}
	seed := uint64(opts.Seed)
	e := &Emulator{
		opts:       opts,
		clock:      time.Now,
		idRand:     rand.New(rand.NewPCG(seed, 0x636c6f7564)),
		keys:       map[string]*account{},
		vms:        core.NewStore[*vm](),
		ips:        core.NewStore[*publicIP](),
		rules:      core.NewStore[*lbRule](),
		freeIPs:    map[string]string{},
		jobs:       core.NewJobs(),
		jobMeta:    map[string]jobMeta{},
		machineNet: nets.Machine,
		publicNet:  nets.Public,
	}
	e.jobDelay.Set(opts.JobDelay)
	e.machineNext = e.machineNet.Addr().Next().Next() // .1 is the gateway
	e.publicNext = e.publicNet.Addr()
	for range 10 {
		e.publicNext = e.publicNext.Next()
	}
	e.seedFixture()
	e.cmds = e.commands()
	e.Server = core.New(http.HandlerFunc(e.serveAPI), core.Options{
		Name:    "cloudstack emulator",
		Latency: opts.Latency,
		Seed:    opts.Seed,
		// The command, from the query or a POST's form body as ApiServlet
		// reads it (the body put back for serveAPI): "POST associateIpAddress".
		Classify: cloudapi.OperationFor,
		Pager:    pager{},
		WriteError: func(w http.ResponseWriter, r *http.Request, _ string, status int, msg string) {
			p, _ := apiParams(r)
			writeError(w, responseName(p.Get("command")), &apiError{code: status, cs: csDefault, text: msg})
		},
		Clock: func() time.Time {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.clock()
		},
	})
	e.Control().HandleFunc("POST /_emulator/provisioning-delay", core.DurationSetter(e.SetJobDelay))
	return e, nil
}

// Start serves the API on addr, a loopback address ("127.0.0.1:0"), and with
// ServeTraffic the load balancer rules too, until Close.
func (e *Emulator) Start(addr string) error {
	return e.StartServing(addr, e.opts.ServeTraffic, &e.dataPlane, e.dataPlaneSpecs)
}

// SetJobDelay changes how long asynchronous jobs started from now take.
func (e *Emulator) SetJobDelay(d time.Duration) {
	e.jobDelay.Set(d)
}

func (e *Emulator) seedFixture() {
	e.fx = Fixture{
		AdminKey: e.token(), AdminSecret: e.token(),
		UserKey: e.token(), UserSecret: e.token(),
		AccountName: "kubernetes", AccountID: e.newID(), UserID: e.newID(), DomainID: e.newID(),
		ZoneID: e.newID(), ZoneName: "zone-1",
		ProjectID: e.newID(), ProjectName: "k8s",
		NetworkID: e.newID(), NetworkName: "k8s-guest", VPCID: e.newID(), ACLListID: e.newID(),
		OfferingID: e.newID(), OfferingName: "Medium Instance",
	}
	e.keys[e.fx.AdminKey] = &account{name: "admin", id: e.newID(), userID: e.newID(), secret: e.fx.AdminSecret, admin: true}
	e.keys[e.fx.UserKey] = &account{name: e.fx.AccountName, id: e.fx.AccountID, userID: e.fx.UserID, secret: e.fx.UserSecret}
}

// Fixture is the emulator's fixture.
func (e *Emulator) Fixture() Fixture { return e.fx }

// CloudConfig is a cloud-config for the cloud's CCM with the user keys, in
// the peer's form ([Global] api-url, api-key, secret-key, zone, project-id
// with InProject).
func (e *Emulator) CloudConfig() string { return e.cloudConfig(e.fx.UserKey, e.fx.UserSecret) }

// AdminCloudConfig is CloudConfig with the administrator's keys, for a CCM
// that needs them (cloudstack-kubernetes-provider calls the admin-only
// listManagementServersMetrics at start).
func (e *Emulator) AdminCloudConfig() string { return e.cloudConfig(e.fx.AdminKey, e.fx.AdminSecret) }

func (e *Emulator) cloudConfig(key, secret string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Global]\napi-url = %s/client/api\napi-key = %s\nsecret-key = %s\nzone = %s\n",
		e.URL(), key, secret, e.fx.ZoneName)
	if e.opts.InProject {
		fmt.Fprintf(&b, "project-id = %s\n", e.fx.ProjectID)
	}
	return b.String()
}

// SetClock replaces the emulator's clock (tests).
func (e *Emulator) SetClock(now func() time.Time) {
	e.mu.Lock()
	e.clock = now
	e.mu.Unlock()
}

// lock takes the state lock, runs the jobs that are due and returns the time.
func (e *Emulator) lock() time.Time {
	e.mu.Lock()
	now := e.clock()
	e.jobs.Settle(now)
	return now
}

// newID is a random UUID from the seeded generator. Call with mu held (or
// before serving).
func (e *Emulator) newID() string {
	return core.UUID(e.idRand)
}

// token is a key of 40 URL-safe characters.
func (e *Emulator) token() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	b := make([]byte, 40)
	for i := range b {
		b[i] = alphabet[e.idRand.IntN(len(alphabet))]
	}
	return string(b)
}

// Objects counts what a CCM may create, by kind (the fixture's own objects
// included): the same counts before a Service and after its deletion mean
// that nothing of it was left behind.
func (e *Emulator) Objects() map[string]int {
	e.lock()
	defer e.mu.Unlock()
	allocated := 0
	for _, ip := range e.ips.All() {
		if ip.state != "Free" {
			allocated++
		}
	}
	return map[string]int{
		"public-addresses": allocated, "load-balancer-rules": e.rules.Len(), "firewall-rules": len(e.firewall),
		"acl-items": len(e.acl), "tags": len(e.tags), "health-check-policies": len(e.healthChecks),
	}
}
