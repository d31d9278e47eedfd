// Package openstack is a stateful, in-memory emulator of the parts of OpenStack
// that a cloud-controller-manager uses, served over HTTP so that the real
// gophercloud v2 client can talk to it.
//
// # What is emulated
//
//   - Keystone v3 at /identity/v3: password authentication (user by name and
//     domain or by id; project scope by id or by name and domain; unscoped
//     requests get the user's default project), application credentials (by id,
//     or by name and user) and re-scoping with the token method. Tokens expire
//     after Options.TokenTTL; a missing, unknown or expired token is answered with
//     401 by every service. GET/HEAD/DELETE /auth/tokens validate and revoke.
//   - Nova at /compute/v2.1: servers (list, detail list with paging and the name,
//     status, flavor and image filters, get, create, delete, os-stop, os-start,
//     reboot, os-interface) and flavors. At microversion 2.47 and later the flavor
//     is embedded in the server. Servers go ACTIVE as soon as they are created.
//     Like Nova, a list page holds at most 1000 servers, newest first, and carries
//     a next link whenever the page is full.
//   - Neutron at /network/v2.0: networks, subnets (IPv4 and IPv6, created and
//     deleted through the API), ports (an address of each IP version),
//     floating IPs (with an allocation pool, attach, detach and router
//     reachability checks), routers (get, list, update of routes and the atomic
//     add_extraroutes/remove_extraroutes), security groups (with tags) and
//     rules (bulk create), If-Match on a port's revision, and the extension list. The trunk extension is not enabled, as in the reference
//     installation. Lists accept equality filters on their attributes, the
//     tags/tags-any/not-tags/not-tags-any filters, fields, limit and marker.
//     An unknown filter is answered with 400, as Neutron's filter validation does.
//   - Octavia at /load-balancer/v2.0/lbaas (and /load-balancer/v2/lbaas): load
//     balancers (with a listeners/pools/members/health monitor graph), listeners,
//     pools, members (including the batch update), health monitors. Every
//     mutation moves the objects through PENDING_CREATE, PENDING_UPDATE or
//     PENDING_DELETE for Options.ProvisioningDelay; while a load balancer is
//     pending, or in ERROR, mutations of it and its children are answered with 409.
//     A load balancer owns a real VIP port in Neutron, so floating IPs can be
//     attached to it; the port goes away with the load balancer. API v2.26:
//     additional VIPs on that port (Options.OctaviaBefore226 makes it v2.25).
//   - Barbican at /key-manager/v1: secrets (text/plain, base64
//     application/octet-stream), certificate and generic containers, read ACLs
//     (keymanager.go).
//
// The fixture created by [New] has one domain, one project, a user with a
// password and an application credential, a private network with a
// 10.0.0.0/24 subnet, an external network "public" with a 203.0.113.0/24
// subnet (both can be moved and made bigger: Options.PrivateCIDR and
// Options.PublicCIDR), a router between them, flavors, an image and the availability zone
// "nova". See [Emulator.Fixture] and [Emulator.CloudConf].
//
// # Control
//
// Latency and faults can be injected ([Emulator.InjectFault]), and every API
// call is counted by service, method, route template and response code
// ([Emulator.Calls]). The same knobs are reachable over HTTP below /_emulator/,
// which needs no token, is not counted and gets no latency:
//
//	GET    /_emulator/calls                  JSON array of CallCount
//	POST   /_emulator/calls/reset
//	GET    /_emulator/faults                 JSON array of the active faults
//	POST   /_emulator/faults                 a JSON Fault; answers {"id": N}
//	DELETE /_emulator/faults
//	POST   /_emulator/latency?d=50ms
//	POST   /_emulator/provisioning-delay?d=2s
//	GET    /_emulator/fixture                the Fixture as JSON
//	GET    /_emulator/cloud.conf             the cloud.conf of CloudConf
//
// In a JSON Fault, RetryAfter is a Go duration string such as "2s" (a bare
// number is taken as nanoseconds) and From/Until are RFC 3339 times.
//
// # What is not emulated
//
// Glance, Cinder, Barbican and every other service; IPv6 (all subnets are
// IPv4); Octavia flavors, availability zones, L7 policies, TLS listeners
// (TERMINATED_HTTPS), amphorae, statistics and the status tree; Octavia's
// amphora VRRP ports; quotas; policy (the one user may do everything in its
// project); microversions of Nova other than the embedded flavor; Neutron
// creation of networks, subnets and routers; server rebuild, resize, metadata
// and tag APIs. Lists are kept in creation order (Nova: newest first) and do
// not honour sort_key/sort_dir.
//
// Servers added with [Emulator.AddServer] never fail for want of addresses:
// when every subnet of the network is full an overflow subnet of the first
// one's size (10.0.1.0/24, 10.0.2.0/24, ... for the default private network),
// attached to the router, is added.
// Servers created over HTTP on a full network go to ERROR instead, as they would
// in Nova.
package openstack
