package devenv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Taints and annotations a kubelet with --cloud-provider=external uses.
const (
	UninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"
	ShutdownTaint      = "node.cloudprovider.kubernetes.io/shutdown"
	ProvidedNodeIP     = "alpha.kubernetes.io/provided-node-ip"
)

var listenConfig net.ListenConfig

// HeartbeatInterval is how often a simulated kubelet renews NodeReady.
const HeartbeatInterval = 5 * time.Second

// Kubelet stands in for a kubelet (Node registration, NodeReady heartbeats) and for
// kube-proxy (TCP and UDP listeners on the node's address at Services' NodePorts,
// the healthCheckNodePort of externalTrafficPolicy: Local Services, and its own
// health check, /healthz on port 10256, from the first Service served on).
type Kubelet struct {
	Name string
	IP   netip.Addr
	env  *Env

	mu        sync.Mutex
	beating   bool
	stopBeat  chan struct{}
	beatDone  chan struct{}
	listeners []closer
	proxyUp   bool // kube-proxy's /healthz is served
}

// ProxyHealthPort is kube-proxy's health check port (its --healthz-bind-address).
const ProxyHealthPort = 10256

type closer interface{ Close() error }

// NewKubelet registers Node name with the uninitialized taint and the node IP
// annotation, marks it Ready and keeps it Ready until StopHeartbeats. The Node and
// listeners are removed when the test ends.
func (e *Env) NewKubelet(t TB, name string, ip string) *Kubelet {
	t.Helper()
	k, err := e.RegisterKubelet(context.Background(), name, ip)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.Remove(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return k
}

// RegisterKubelet is NewKubelet without a test: the caller calls Remove. A
// providerID given is set at registration, as a kubelet started with
// --provider-id does (OKE's do).
func (e *Env) RegisterKubelet(ctx context.Context, name string, ip string, providerID ...string) (*Kubelet, error) {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return nil, err
	}
	k := &Kubelet{Name: name, IP: addr, env: e}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"kubernetes.io/hostname": name},
			Annotations: map[string]string{ProvidedNodeIP: ip},
		},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: UninitializedTaint, Value: "true", Effect: v1.TaintEffectNoSchedule}}},
	}
	if len(providerID) > 0 {
		node.Spec.ProviderID = providerID[0]
	}
	if _, err := e.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("registering Node %s: %w", name, err)
	}
	if err := k.setReady(ctx, v1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"); err != nil {
		return nil, fmt.Errorf("marking Node %s Ready: %w", name, err)
	}
	k.startHeartbeats()
	return k, nil
}

// Remove stops heartbeats and backends and deletes the Node.
func (k *Kubelet) Remove(ctx context.Context) error {
	k.StopHeartbeats(false)
	k.CloseBackends()
	err := k.env.Client.CoreV1().Nodes().Delete(ctx, k.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Node %s: %w", k.Name, err)
	}
	return nil
}

func (k *Kubelet) setReady(ctx context.Context, status v1.ConditionStatus, reason, msg string) error {
	now := metav1.Now()
	patch := map[string]any{"status": map[string]any{"conditions": []v1.NodeCondition{{
		Type: v1.NodeReady, Status: status, Reason: reason, Message: msg,
		LastHeartbeatTime: now, LastTransitionTime: now,
	}}}}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = k.env.Client.CoreV1().Nodes().PatchStatus(ctx, k.Name, data)
	return err
}

func (k *Kubelet) startHeartbeats() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.beating {
		return
	}
	k.beating = true
	k.stopBeat, k.beatDone = make(chan struct{}), make(chan struct{})
	stop, done := k.stopBeat, k.beatDone
	go func() {
		defer close(done)
		interval := HeartbeatInterval
		if k.env.HeartbeatInterval > 0 {
			interval = k.env.HeartbeatInterval
		}
		wait.Until(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = k.setReady(ctx, v1.ConditionTrue, "KubeletReady", "kubelet is posting ready status")
		}, interval, stop)
	}()
}

// StopHeartbeats stops posting NodeReady. With markNotReady the Node turns
// Ready=Unknown at once, as kube-controller-manager's node lifecycle controller
// would mark it after its grace period.
func (k *Kubelet) StopHeartbeats(markNotReady bool) {
	k.mu.Lock()
	if k.beating {
		close(k.stopBeat)
		<-k.beatDone
		k.beating = false
	}
	k.mu.Unlock()
	if markNotReady {
		_ = k.setReady(context.Background(), v1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.")
	}
}

// ResumeHeartbeats marks the Node Ready again and keeps it so.
func (k *Kubelet) ResumeHeartbeats() error {
	if err := k.setReady(context.Background(), v1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"); err != nil {
		return err
	}
	k.startHeartbeats()
	return nil
}

// ServeService listens on the node's IP at every NodePort of svc (TCP and UDP, as
// the port says) and answers each request with "<node name>", standing in for
// kube-proxy plus a backend Pod. For externalTrafficPolicy: Local it also answers
// the healthCheckNodePort with 200 when healthy is true, 503 otherwise.
func (k *Kubelet) ServeService(t TB, svc *v1.Service, healthy bool) {
	t.Helper()
	if err := k.Serve(svc, healthy); err != nil {
		t.Fatal(err)
	}
}

// Serve is ServeService without a test.
func (k *Kubelet) Serve(svc *v1.Service, healthy bool) error {
	for _, p := range svc.Spec.Ports {
		addr := netip.AddrPortFrom(k.IP, uint16(p.NodePort)).String()
		switch p.Protocol {
		case v1.ProtocolUDP:
			pc, err := listenConfig.ListenPacket(context.Background(), "udp", addr)
			if err != nil {
				return fmt.Errorf("node %s: listening on udp %s: %w", k.Name, addr, err)
			}
			k.track(pc)
			go serveUDP(pc, k.Name)
		default:
			l, err := listenConfig.Listen(context.Background(), "tcp", addr)
			if err != nil {
				return fmt.Errorf("node %s: listening on tcp %s: %w", k.Name, addr, err)
			}
			k.track(l)
			go serveTCP(l, k.Name)
		}
	}
	if err := k.serveProxyHealth(); err != nil {
		return err
	}
	if svc.Spec.HealthCheckNodePort == 0 {
		return nil
	}
	addr := netip.AddrPortFrom(k.IP, uint16(svc.Spec.HealthCheckNodePort)).String()
	l, err := listenConfig.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return fmt.Errorf("node %s: health port %s: %w", k.Name, addr, err)
	}
	k.track(l)
	code, local := http.StatusOK, 1
	if !healthy {
		code, local = http.StatusServiceUnavailable, 0
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, `{"localEndpoints": %d}`, local)
	})}
	go func() { _ = srv.Serve(l) }()
	return nil
}

func (k *Kubelet) track(c closer) {
	k.mu.Lock()
	k.listeners = append(k.listeners, c)
	k.mu.Unlock()
}

// CloseBackends stops every NodePort listener of this node (and kube-proxy's
// health check: the node's proxy is down).
func (k *Kubelet) CloseBackends() {
	k.mu.Lock()
	ls := k.listeners
	k.listeners, k.proxyUp = nil, false
	k.mu.Unlock()
	for _, l := range ls {
		_ = l.Close()
	}
}

func serveTCP(l net.Listener, name string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
				return
			}
			_, _ = c.Write([]byte(name + "\n"))
		}()
	}
}

func serveUDP(pc net.PacketConn, name string) {
	buf := make([]byte, 2048)
	for {
		_, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = pc.WriteTo([]byte(name), from)
	}
}

// RequestTCP connects from src (any loopback address; zero means the kernel's
// choice) to dst, sends a line and returns the answer (the serving node's name).
func RequestTCP(src netip.Addr, dst netip.AddrPort) (string, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	if src.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
	}
	c, err := d.Dial("tcp", dst.String())
	return ask(c, err, 3*time.Second, "hello\n", func(c net.Conn) (string, error) {
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("reading the answer: %w", err)
		}
		return line[:len(line)-1], nil
	})
}

// ask writes msg on the connection just dialled (unless dialling failed:
// err) and reads the answer with read, all within timeout; it closes c.
func ask(c net.Conn, err error, timeout time.Duration, msg string, read func(net.Conn) (string, error)) (string, error) {
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	return read(c)
}

// RequestUDP sends one datagram from src to dst and returns the answer.
func RequestUDP(src netip.Addr, dst netip.AddrPort) (string, error) {
	var laddr *net.UDPAddr
	if src.IsValid() {
		laddr = &net.UDPAddr{IP: src.AsSlice()}
	}
	c, err := net.DialUDP("udp", laddr, net.UDPAddrFromAddrPort(dst))
	return ask(c, err, 2*time.Second, "hello", func(c net.Conn) (string, error) {
		buf := make([]byte, 2048)
		n, err := c.Read(buf)
		return string(buf[:n]), err
	})
}

// Poll calls f every interval until it returns nil or timeout passes; it returns
// f's last error. An error wrapped by Permanent ends the wait at once. Every wait in
// the e2e suite is bounded this way.
func Poll(timeout, interval time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return p.error
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still failing after %s: %w", timeout, err)
		}
		time.Sleep(interval)
	}
}

// Permanent marks an error that no amount of waiting fixes: Poll returns it at once.
func Permanent(err error) error { return permanent{err} }

type permanent struct{ error }

// DumpEvents logs the Events of the namespace (and of Nodes), for failed tests.
func (e *Env) DumpEvents(t TB, namespace string) {
	for _, ns := range []string{namespace, metav1.NamespaceDefault} {
		evs, err := e.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Logf("listing events of %s: %v", ns, err)
			continue
		}
		for _, ev := range evs.Items {
			t.Logf("event %s %s/%s %s %s: %s (x%d)", ns, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Type, ev.Reason, ev.Message, ev.Count)
		}
	}
}

// NodeUID returns the UID of a Node, or "" when it does not exist.
func (e *Env) NodeUID(name string) types.UID {
	n, err := e.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return n.UID
}

// serveProxyHealth answers kube-proxy's /healthz on the node's address, once.
func (k *Kubelet) serveProxyHealth() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.proxyUp {
		return nil
	}
	addr := netip.AddrPortFrom(k.IP, ProxyHealthPort).String()
	l, err := listenConfig.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return fmt.Errorf("node %s: kube-proxy's health port %s: %w", k.Name, addr, err)
	}
	k.listeners = append(k.listeners, l)
	k.proxyUp = true
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprint(w, `{"lastUpdated": "", "currentTime": ""}`)
	})}
	go func() { _ = srv.Serve(l) }()
	return nil
}
