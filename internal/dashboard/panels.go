package dashboard

// sel is the selector of the CCM's series.
const sel = `job=~"$job"`

// orZero shows a panel's series at 0 while none has happened: an error or
// a throttling the CCM never met has no series of its own.
func orZero(expr, by string) string {
	return expr + " or sum by (" + by + ") (rate(overcast_cloud_api_requests_total{" + sel + "}[$__rate_interval])) * 0"
}

var panels = []Panel{
	{Row: "Cloud API", Title: "Requests", Unit: "reqps",
		Description: "Calls to the cloud's API a second, by cloud and operation (every attempt, retries included).",
		Queries:     []Query{{`sum by (cloud, operation) (rate(overcast_cloud_api_requests_total{` + sel + `}[$__rate_interval]))`, "{{cloud}} {{operation}}"}}},
	{Row: "Cloud API", Title: "Errors", Unit: "reqps",
		Description: "Calls answered with anything but 2xx, or not answered (code error), by cloud, operation and code.",
		Queries: []Query{{orZero(`sum by (cloud, operation, code) (rate(overcast_cloud_api_requests_total{`+sel+`, code!~"2.."}[$__rate_interval]))`, "cloud, operation"),
			"{{cloud}} {{operation}} {{code}}"}}},
	{Row: "Cloud API", Title: "Latency (p50, p95)", Unit: "s",
		Description: "Duration of one call until the answer's headers, by cloud and operation.",
		Queries: []Query{
			{`histogram_quantile(0.5, sum by (le, cloud, operation) (rate(overcast_cloud_api_request_duration_seconds_bucket{` + sel + `}[$__rate_interval])))`, "p50 {{cloud}} {{operation}}"},
			{`histogram_quantile(0.95, sum by (le, cloud, operation) (rate(overcast_cloud_api_request_duration_seconds_bucket{` + sel + `}[$__rate_interval])))`, "p95 {{cloud}} {{operation}}"}}},
	{Row: "Cloud API", Title: "Throttling", Unit: "reqps",
		Description: "Calls the cloud answered 429 (throttled by the cloud), and calls the CCM's own rate limits delayed, by bucket.",
		Queries: []Query{
			{orZero(`sum by (cloud, service) (rate(overcast_cloud_api_server_throttled_total{`+sel+`}[$__rate_interval]))`, "cloud, service"), "429 {{cloud}} {{service}}"},
			{orZero(`sum by (cloud, bucket) (rate(overcast_cloud_api_throttled_total{`+sel+`}[$__rate_interval]))`, "cloud"), "limited {{cloud}} {{bucket}}"}}},
	{Row: "Load balancers", Title: "Syncs by outcome", Unit: "ops",
		Description: "Passes of the service controller over a Service: done, progressing (the cloud is working), problem (a person must act), error.",
		Queries:     []Query{{`sum by (operation, result) (rate(overcast_service_load_balancer_syncs_total{` + sel + `}[$__rate_interval]))`, "{{operation}} {{result}}"}}},
	{Row: "Load balancers", Title: "Services by phase", Unit: "short",
		Description: "Services with a load balancer, by the phase of their last pass.",
		Queries:     []Query{{`sum by (phase) (overcast_service_load_balancers{` + sel + `})`, "{{phase}}"}}},
	{Row: "Load balancers", Title: "Longest wait for a load balancer", Unit: "s", Stat: true,
		Description: "How long the Service that has waited longest for its load balancer has waited (0: every one is ready). Alert: OvercastLoadBalancerNotConverged.",
		Queries:     []Query{{`max(overcast_service_load_balancer_unconverged_seconds{` + sel + `})`, "longest wait"}}},
	{Row: "Load balancers", Title: "Drift repairs", Unit: "short", Stat: true,
		Description: "Load balancers found changed behind the CCM's back and repaired, in the last hour. Alert: OvercastDriftRepairsNeverStop.",
		Queries:     []Query{{`sum(increase(overcast_service_load_balancer_drift_repairs_total{` + sel + `}[1h]))`, "repairs"}}},
	{Row: "Nodes and leader", Title: "Node deletions held", Unit: "short", Stat: true,
		Description: "Nodes whose deletion the Node deletion guard holds (their machines vanished with too many others at once). Alert: OvercastNodeDeletionsHeld.",
		Queries:     []Query{{`max(overcast_node_deletions_held{` + sel + `})`, "held"}}},
	{Row: "Nodes and leader", Title: "Leader", Unit: "short", Stat: true,
		Description: "The replica that leads (1), by pod. Alert: OvercastNoLeader.",
		Queries:     []Query{{`max by (instance) (leader_election_master_status{` + sel + `})`, "{{instance}}"}}},
}
