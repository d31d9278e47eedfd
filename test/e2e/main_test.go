// Package e2e tests overcast-ccm against a real kube-apiserver and etcd.
package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/overcast-ccm/overcast/internal/devenv"
	"github.com/overcast-ccm/overcast/test/framework"
)

var env *framework.Env

func TestMain(m *testing.M) {
	var err error
	env, err = framework.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cannot start the control plane: %v\n", err)
		os.Exit(1)
	}
	if err := env.ApplyCloud(context.Background(), "local"); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: applying deploy/local: %v\n", err)
		env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

// Waits in this suite.
const (
	waitLong  = 60 * time.Second
	waitShort = 20 * time.Second
	tick      = 200 * time.Millisecond
)

// namespace creates a namespace for the test and dumps its Events if the test fails.
func namespace(t *testing.T) string { return env.Namespace(t) }

// inventory writes an inventory file and returns its path.
func writeInventory(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path)) // atomic, as a ConfigMap update is
}

// localConfig is a cloud config with an inventory file and the given pools (YAML list items).
func localConfig(t *testing.T, inventory string, pools string) (cfg string, inventoryPath string) {
	t.Helper()
	inventoryPath = filepath.Join(t.TempDir(), "inventory.yaml")
	writeInventory(t, inventoryPath, inventory)
	return fmt.Sprintf(`inventoryFile: %s
reloadInterval: 200ms
region: e2e-region
zone: e2e-zone-a
loadBalancer:
  healthCheck: {interval: 500ms, timeout: 400ms, unhealthyThreshold: 1}
  pools:
%s`, inventoryPath, pools), inventoryPath
}

func autoConfig(pools string) string {
	return fmt.Sprintf(`autoInventory: true
loadBalancer:
  healthCheck: {interval: 500ms, timeout: 400ms, unhealthyThreshold: 1}
  pools:
%s`, pools)
}

func waitNodeInitialised(t *testing.T, name string) *v1.Node {
	t.Helper()
	var node *v1.Node
	err := devenv.Poll(waitLong, tick, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, tn := range n.Spec.Taints {
			if tn.Key == devenv.UninitializedTaint {
				return fmt.Errorf("node %s still has the uninitialized taint%s", name, nodeEvents(name))
			}
		}
		node = n
		return nil
	})
	require.NoError(t, err)
	return node
}

// waitNodeAddressed is waitNodeInitialised until the Node has its addresses
// too: the node controller writes them after it removes the taint
// (k8s.io/cloud-provider's syncNode, "so that users do not see any
// significant delay"), so a Node is briefly initialised without them.
func waitNodeAddressed(t *testing.T, name string) *v1.Node {
	t.Helper()
	node := waitNodeInitialised(t, name)
	require.NoError(t, devenv.Poll(waitLong, tick, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(n.Status.Addresses) == 0 {
			return fmt.Errorf("node %s has no addresses yet%s", name, nodeEvents(name))
		}
		node = n
		return nil
	}))
	return node
}

// nodeEvents is the Node's latest Events, to say in a failure why it is not
// yet what a test waits for ("" when it has none).
func nodeEvents(name string) string {
	evs, err := env.Client.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(),
		metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + name})
	if err != nil {
		return "; its events: " + err.Error()
	}
	var b strings.Builder
	for _, ev := range evs.Items[max(0, len(evs.Items)-5):] {
		fmt.Fprintf(&b, "; %s %s: %s (x%d, last %s)", ev.Type, ev.Reason, ev.Message, ev.Count, ev.LastTimestamp.Format(time.TimeOnly))
	}
	return b.String()
}

// lbService creates a LoadBalancer Service and deletes it (waiting for the CCM to
// release it) when the test ends.
func lbService(t *testing.T, ns, name string, mutate func(*v1.Service)) *v1.Service {
	t.Helper()
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}},
		},
	}
	if mutate != nil {
		mutate(svc)
	}
	created, err := env.Client.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { deleteService(t, ns, name) })
	return created
}

func deleteService(t *testing.T, ns, name string) {
	ctx := context.Background()
	err := env.Client.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	err = devenv.Poll(waitShort, tick, func() error {
		_, err := env.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("service %s/%s still exists", ns, name)
	})
	if err != nil {
		// The CCM is gone: drop the finalizer so the namespace can be reused.
		_, _ = env.Client.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	}
}

func waitIngressIP(t *testing.T, ns, name string) netip.Addr {
	t.Helper()
	var ip netip.Addr
	err := devenv.Poll(waitLong, tick, func() error {
		svc, err := env.Client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(svc.Status.LoadBalancer.Ingress) == 0 {
			return fmt.Errorf("service %s/%s has no ingress yet", ns, name)
		}
		ip, err = netip.ParseAddr(svc.Status.LoadBalancer.Ingress[0].IP)
		return err
	})
	require.NoError(t, err)
	return ip
}

func getService(t *testing.T, ns, name string) *v1.Service {
	t.Helper()
	svc, err := env.Client.CoreV1().Services(ns).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return svc
}

// waitEvent waits for an Event with reason on the object and returns its message.
func waitEvent(t *testing.T, ns, object, reason string) string {
	t.Helper()
	var msg string
	err := devenv.Poll(waitLong, tick, func() error {
		evs, err := env.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Name == object && ev.Reason == reason {
				msg = ev.Message
				return nil
			}
		}
		return fmt.Errorf("no %s event on %s/%s", reason, ns, object)
	})
	require.NoError(t, err)
	return msg
}

// serveFrom polls until a TCP request to dst answers, and returns the answering node.
func waitTCP(t *testing.T, src netip.Addr, dst netip.AddrPort) string {
	t.Helper()
	var got string
	err := devenv.Poll(waitShort, tick, func() error {
		var err error
		got, err = devenv.RequestTCP(src, dst)
		return err
	})
	require.NoError(t, err, "TCP through %s", dst)
	return got
}
