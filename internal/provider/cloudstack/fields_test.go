package cloudstack

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Drift held to the wire: every parameter the CCM sends in a write (the
// pinned calls of csapi/wire_test.go say which, in csapi/testdata/writes.json) is either a field the drift
// check, the walk and explain compare, changed behind the CCM's back by
// TestEveryFieldChangedBehindOurBackIsSeenExplainedAndPutBack, or left out
// here with the reason (docs/cloudstack.md has both tables).

// objectOf is the object each write makes or changes.
var objectOf = map[string]string{
	"associateIpAddress": "address", "disassociateIpAddress": "address", "createTags": "tags",
	"createLoadBalancerRule": "rule", "updateLoadBalancerRule": "rule", "deleteLoadBalancerRule": "rule",
	"assignToLoadBalancerRule": "rule", "removeFromLoadBalancerRule": "rule",
	"createFirewallRule": "firewall rule", "deleteFirewallRule": "firewall rule",
	"createNetworkACL": "ACL item", "deleteNetworkACL": "ACL item",
	"createLBHealthCheckPolicy": "health check", "deleteLBHealthCheckPolicy": "health check",
}

// fieldsLeftOut are the parameters sent that the drift check does not
// compare, by object and name, and why.
var fieldsLeftOut = map[string]string{
	"address id":        "identity: the address released",
	"address networkid": "identity: where an address is associated (the guest network, or its VPC); never changed in place",
	"address vpcid":     "identity, as networkid",
	"address ipaddress": "identity: spec.loadBalancerIP; another address is a move (Drift: the rules are on another address)",
	"address projectid": "identity: the configured project",
	"tags resourceids":  "marks: whose an object is; an object whose marks change is no longer the Service's (another is made), never rewritten",
	"tags resourcetype": "marks, as resourceids",
	"tags tags":         "marks, as resourceids",
	"rule id":           "identity: the rule updated, assigned or deleted",
	"rule name": "identity: the peer's name (<lb>-<protocol>-<port>) finds a Service's rules; another name is another rule " +
		"(a rule removed: TestEveryObjectChangedBehindOurBackIsRepaired)",
	"rule publicipid": "identity: the Service's address, which its rules say; a rule on another address is deleted (ruleWrong), " +
		"and the address moved is Drift's",
	"rule networkid": "immutable: the Nodes' guest network, which a rule cannot leave",
	"rule openfirewall": "no field of a rule: it asks the server to open the firewall as it creates the rule " +
		"(false: the CCM opens it itself, the firewall rules compared below)",
	"firewall rule id":          "identity: the firewall rule deleted",
	"firewall rule ipaddressid": "structure: a firewall rule is read from its address, the Service's",
	"ACL item id":               "identity: the item deleted",
	"ACL item aclid":            "structure: the tier's list, read from its network",
	"ACL item reason": "mark: says the item is the Service's from its creation (as its tags do after); an item with another is not ours, " +
		"never rewritten",
	"health check id":       "identity: the policy deleted",
	"health check lbruleid": "structure: a policy is read from its rule",
}

// writesSent are the parameters of each write, by command, as csapi's
// pinned calls send them (its testdata/writes.json, which its test holds to
// what they send).
func writesSent(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("csapi", csapiWrites))
	require.NoError(t, err)
	var out map[string][]string
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// csapiWrites is csapi's record of the writes' parameters.
const csapiWrites = "testdata/writes.json"

func TestEveryFieldSentIsDriftCheckedOrLeftOutWithAReason(t *testing.T) {
	sent := writesSent(t)
	require.Contains(t, sent, "createLoadBalancerRule")
	used := map[string]bool{}
	for _, command := range slices.Sorted(maps.Keys(sent)) {
		object, ok := objectOf[command]
		if !assert.True(t, ok, "%s is a write: say in objectOf what it makes or changes", command) {
			continue
		}
		for _, p := range sent[command] {
			key := object + " " + p
			used[key] = true
			_, changed := fieldChanges[key]
			_, left := fieldsLeftOut[key]
			assert.True(t, changed != left, "%s sends %s: change it behind our back in fieldChanges, or leave it out with why in fieldsLeftOut (one of the two)", command, key)
		}
	}
	for key := range fieldChanges {
		assert.True(t, used[key], "fieldChanges holds %s, which no write sends", key)
	}
	for key := range fieldsLeftOut {
		assert.True(t, used[key], "fieldsLeftOut holds %s, which no write sends", key)
	}
}
