// Package l4proxy is the in-process layer-4 load balancer of the local cloud.
//
// A [Manager] owns sets of listeners, one set per key (a Service UID). Each
// listener binds a virtual IP and port (the Service's load-balancer ingress) and
// forwards TCP connections or UDP flows to backends, which are Kubernetes nodes
// addressed by InternalIP:NodePort. Backends are chosen round-robin among those
// that are both eligible (asked through [Options.Eligible]) and healthy (judged by
// per-backend probers configured through [HealthCheck]).
//
// [Manager.Ensure] is level-triggered and idempotent: it makes a key's listeners
// exactly the given specs, updating existing listeners in place so that
// established connections survive backend, source-range and health-check changes.
//
// Counters and backend health of every listener are available through
// [Manager.Status]. Logging goes to [Options.Logger]: V(2) for lifecycle events
// (listeners started, updated and stopped, backend health transitions), V(4) for
// individual connections and flows, V(5) for per-packet drops. Payloads are never
// logged.
package l4proxy
