package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/overcast-ccm/overcast/internal/deletionguard"
	"github.com/overcast-ccm/overcast/internal/explain"
	"github.com/overcast-ccm/overcast/internal/provider"
)

// parse is parseExplain of args on a fresh flag set.
func parse(args ...string) (explainRequest, error) {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cloudFlags(fs, time.Minute)
	return parseExplain(fs, args)
}

// The command line: what and which, flags before or after; anything else
// is a usage error, exit status 2, saying what to write.
func TestExplainCommandLine(t *testing.T) {
	req, err := parse("service", "default/web", "-o", "json", "--cloud-provider=local")
	require.NoError(t, err)
	assert.Equal(t, explainRequest{what: "service", namespace: "default", name: "web", json: true, clusterName: "kubernetes", home: "kube-system", guard: req.guard}, req)
	req, err = parse("--cluster-name=prod", "node", "worker-1", "--leader-elect-resource-namespace=ccm")
	require.NoError(t, err)
	assert.Equal(t, "node", req.what)
	assert.Equal(t, "worker-1", req.name)
	assert.Equal(t, "prod", req.clusterName)
	assert.Equal(t, "ccm", req.home, "where overcast-ccm keeps its members ledger")

	for _, args := range [][]string{
		{},
		{"service"},
		{"service", "web"},
		{"service", "default/"},
		{"pod", "default/web"},
		{"node", "a", "b"},
		{"node", "a", "-o", "yaml"},
		{"node", "a", "--no-such-flag"},
	} {
		_, err := parse(args...)
		assert.Equal(t, 2, explainExit(err), "%q: %v", args, err)
	}
	_, err = parse("service", "web")
	assert.ErrorContains(t, err, "NAMESPACE/NAME, e.g. default/web")
	assert.Equal(t, 1, explainExit(errNothing))
	assert.Equal(t, 1, explainExit(errors.New("the cloud is down")))
	assert.Equal(t, 0, explainExit(nil))
}

// localCloud is the local cloud with one pool and every Node its own
// instance.
func localCloud(t *testing.T) cloudprovider.Interface {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud-config.yaml")
	require.NoError(t, os.WriteFile(path, []byte("autoInventory: true\nzone: dc1-rack1\nloadBalancer:\n  pools:\n  - name: default\n    addresses: [\"192.0.2.100-192.0.2.150\"]\n"), 0o600))
	c, err := cloudprovider.InitCloudProvider("local", path)
	require.NoError(t, err)
	return c
}

// cluster is a fake cluster with a Service web that has its address, a
// Node, an Event and the Service's conditions.
func cluster() *fake.Clientset {
	now := metav1.NewTime(time.Now().Add(-5 * time.Minute))
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080}}},
		Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "192.0.2.100"}}},
			Conditions: []metav1.Condition{{Type: "LoadBalancerReady", Status: metav1.ConditionTrue, Reason: "EnsuredLoadBalancer", LastTransitionTime: now}}}}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}, Spec: v1.NodeSpec{ProviderID: "local://worker-1"},
		Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.11"}},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: now}}}}
	ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "default"}, Type: v1.EventTypeNormal, Reason: "EnsuredLoadBalancer",
		Message: "Ensured load balancer", Count: 1, LastTimestamp: now,
		InvolvedObject: v1.ObjectReference{Kind: "Service", Namespace: "default", Name: "web", UID: "uid-web"}}
	kubeSystem := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "uid-cluster"}}
	return fake.NewClientset(svc, node, ev, kubeSystem)
}

// The text a person reads: headings and aligned rows of what matters; the
// JSON a script reads: the one shape of every cloud.
func TestExplainPrintsTextAndJSON(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	err := explainWith(ctx, &out, explainRequest{what: "service", namespace: "default", name: "web", clusterName: "kubernetes",
		guard: deletionguard.Default}, localCloud(t), cluster())
	require.NoError(t, err)
	text := out.String()
	t.Log("\n" + text)
	for _, line := range []string{
		"Service default/web on local (uid uid-web)",
		"\nLoad balancer\n",
		"  192.0.2.100  pool address",
		"  TCP/80  TCP       80    TCP/80\n",
		"    10.0.0.11:30080  worker-1",
		"\nLast outcome\n",
		"  LoadBalancerReady  True  EnsuredLoadBalancer  5m ago",
		"\nEvents\n",
		"  5m ago  Normal  EnsuredLoadBalancer  Ensured load balancer",
	} {
		assert.Contains(t, text, line)
	}

	out.Reset()
	err = explainWith(ctx, &out, explainRequest{what: "service", namespace: "default", name: "web", json: true, guard: deletionguard.Default},
		localCloud(t), cluster())
	require.NoError(t, err)
	var e provider.ServiceExplanation
	require.NoError(t, json.Unmarshal(out.Bytes(), &e))
	assert.True(t, e.Found)
	assert.Equal(t, "local", e.Cloud)
	assert.Equal(t, "192.0.2.100", e.Addresses[0].IP)
	assert.Equal(t, "EnsuredLoadBalancer", e.Events[0].Reason)
	var shape map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &shape))
	for _, k := range []string{"cloud", "service", "uid", "found", "loadBalancer", "addresses", "listeners", "pools", "securityRules", "drift", "conditions", "events"} {
		assert.Contains(t, shape, k, "the JSON always has %s", k)
	}

	out.Reset()
	err = explainWith(ctx, &out, explainRequest{what: "node", name: "worker-1", guard: deletionguard.Default}, localCloud(t), cluster())
	require.NoError(t, err)
	t.Log("\n" + out.String())
	for _, line := range []string{"Node worker-1 on local (providerID local://worker-1)", "\nMachine\n", "\nWhat the node controller sets\n",
		"topology.kubernetes.io/zone=dc1-rack1", "\nDeletion guard\n", "  the machine exists: the Node is not deleted", "  Ready  True  KubeletReady  5m ago"} {
		assert.Contains(t, out.String(), line)
	}
}

// Exit status 1 with the explanation printed when the cloud holds nothing,
// and with what to do for a Service or Node the cluster does not have.
func TestExplainOfNothingAndOfTheUnknown(t *testing.T) {
	ctx := context.Background()
	kube := cluster()
	svc, err := kube.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	svc.Status.LoadBalancer.Ingress = nil
	_, err = kube.CoreV1().Services("default").UpdateStatus(ctx, svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	var out bytes.Buffer
	err = explainWith(ctx, &out, explainRequest{what: "service", namespace: "default", name: "web", guard: deletionguard.Default}, localCloud(t), kube)
	assert.ErrorIs(t, err, errNothing)
	assert.Equal(t, 1, explainExit(err))
	assert.Contains(t, out.String(), "The cloud holds nothing for it.")

	err = explainWith(ctx, &out, explainRequest{what: "service", namespace: "default", name: "nope", guard: deletionguard.Default}, localCloud(t), kube)
	assert.ErrorIs(t, err, explain.ErrUnknown)
	assert.ErrorContains(t, err, "kubectl get services -A")
	assert.Equal(t, 1, explainExit(err))
	err = explainWith(ctx, &out, explainRequest{what: "node", name: "nope", guard: deletionguard.Default}, localCloud(t), kube)
	assert.ErrorIs(t, err, explain.ErrUnknown)
	assert.ErrorContains(t, err, "kubectl get nodes")
}
