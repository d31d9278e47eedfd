package quickstart

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/emulator/core/coretest"
	emulator "github.com/overcast-ccm/overcast/internal/emulator/openstack"
	"github.com/overcast-ccm/overcast/test/framework"
)

// doctor runs the image's overcast doctor on this machine with the admin's
// kubeconfig, as an operator would from a workstation.
func doctor(t *testing.T, rootfs, cloudConf string) (string, int) {
	t.Helper()
	return framework.RunDoctor(t, filepath.Join(rootfs, "usr/local/bin/overcast"), "openstack", cloudConf,
		"--kubeconfig="+env.AdminKubeconfig, "--timeout=60s")
}

var row = framework.DoctorRow

// Everything broken at once: each broken thing gets its own failing row with its
// fix, and the exit status says so.
func TestDoctorNamesEachBrokenThing(t *testing.T) {
	rootfs, _ := image(t)
	emu := coretest.Serve(t, emulator.New(emulator.Options{PrivateCIDR: "127.0.65.0/24"}), nil)

	registerTheDoctorsNodes(t, emu)
	anotherCCMHoldsTheLease(t)

	// The user lacks the load-balancer role: Octavia answers 403 (its default
	// policy for a project user without load-balancer_member or _observer).
	// Version discovery stays public, as in Octavia.
	for _, pre := range []string{"/load-balancer/v2/lbaas", "/load-balancer/v2.0/lbaas"} {
		emu.InjectFault(emulator.Fault{Service: "load-balancer", Route: "GET " + pre + "/loadbalancers", Status: 403})
	}

	// No RBAC installed (this control plane starts bare).
	out, code := doctor(t, rootfs, emu.CloudConf())
	assert.Equal(t, 1, code, "a failed check makes the exit status 1")
	assert.Regexp(t, `^cloud config +ok `, row(out, "cloud config"))
	assert.Regexp(t, `^openstack: credentials +ok `, row(out, "openstack: credentials"))
	assert.Regexp(t, `^openstack: compute \(servers\) +ok `, row(out, "openstack: compute (servers)"))

	octavia := row(out, "openstack: load-balancer (Octavia)")
	assert.Contains(t, octavia, "FAIL")
	assert.Contains(t, octavia, "403 Forbidden")
	assert.Contains(t, octavia, "load-balancer_member role")

	rbac := row(out, "kubernetes: RBAC")
	assert.Contains(t, rbac, "FAIL")
	assert.Contains(t, rbac, "system:serviceaccount:kube-system:overcast-ccm may do none of the 23 things the CCM does")
	assert.Contains(t, rbac, "deploy/rbac.yaml")

	kubelets := row(out, "kubernetes: kubelets")
	assert.Contains(t, kubelets, "FAIL")
	assert.Contains(t, kubelets, "dr-legacy")
	assert.NotContains(t, kubelets, "dr-ok")
	assert.Contains(t, kubelets, "--cloud-provider=external")

	nodes := row(out, "nodes ↔ instances")
	assert.Contains(t, nodes, "FAIL")
	assert.Contains(t, nodes, "dr-ghost")
	assert.Contains(t, nodes, "dr-legacy")
	assert.NotContains(t, nodes, "dr-ok,")

	lease := row(out, "leader lease")
	assert.Contains(t, lease, "FAIL")
	assert.Contains(t, lease, "openstack-cloud-controller-manager-x7k2p")
	assert.Contains(t, lease, "stop the other cloud-controller-manager")

	// A wrong secret: the credentials row fails on its own, and says what to check.
	wrong := strings.Replace(emu.CloudConf(), "application-credential-secret=", "application-credential-secret=wrong-", 1)
	out, code = doctor(t, rootfs, wrong)
	assert.Equal(t, 1, code)
	creds := row(out, "openstack: credentials")
	assert.Contains(t, creds, "FAIL")
	assert.Contains(t, creds, "application-credential-id/-secret")
	assert.NotContains(t, out, "wrong-appcred", "the secret never appears in doctor's output")

	// A config that does not parse: every problem named.
	out, code = doctor(t, rootfs, "[Global]\nauth-url=ftp://x\n[LoadBalancer]\nlb-method=FASTEST\n")
	assert.Equal(t, 1, code)
	cfg := row(out, "cloud config")
	assert.Contains(t, cfg, "FAIL")
	assert.Contains(t, cfg, "auth-url")
	assert.Contains(t, cfg, "lb-method")
}

// registerTheDoctorsNodes registers a Node whose server exists, one whose
// server does not, and one registered by a kubelet without
// --cloud-provider=external (no taint, no providerID).
func registerTheDoctorsNodes(t *testing.T, emu *emulator.Emulator) {
	ctx := t.Context()
	_, ip := emu.AddServer(emulator.ServerSpec{Name: "dr-ok"})
	env.NewKubelet(t, "dr-ok", ip)
	env.NewKubelet(t, "dr-ghost", "127.0.65.200")
	_, err := env.Client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dr-legacy"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Nodes().Delete(context.Background(), "dr-legacy", metav1.DeleteOptions{})
	})
}

// anotherCCMHoldsTheLease makes another CCM's pod and has it hold the leader
// Lease.
func anotherCCMHoldsTheLease(t *testing.T) {
	ctx := t.Context()
	if _, err := env.Client.CoreV1().ServiceAccounts("kube-system").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	_, err := env.Client.CoreV1().Pods("kube-system").Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "openstack-cloud-controller-manager-x7k2p"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "ccm",
			Image: "registry.k8s.io/provider-os/openstack-cloud-controller-manager:v1.31.0"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Pods("kube-system").Delete(context.Background(), "openstack-cloud-controller-manager-x7k2p", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
	})
	now := metav1.NewMicroTime(time.Now())
	_, err = env.Client.CoordinationV1().Leases("kube-system").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "cloud-controller-manager"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("openstack-cloud-controller-manager-x7k2p_0f4d2c1e"),
			LeaseDurationSeconds: ptr(int32(3600)), AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Client.CoordinationV1().Leases("kube-system").Delete(context.Background(), "cloud-controller-manager", metav1.DeleteOptions{})
	})
}
