package oci

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// Per-Service workload identity (oci.oraclecloud.com/workload-service-account),
// as the peer serves it (pkg/cloudprovider/providers/oci/load_balancer.go,
// getLoadBalancerProvider; pkg/oci/client/client.go, LoadBalancer and
// Networking): the Service's load balancer is made, changed, read and
// deleted as the ServiceAccount it names, in the Service's namespace, so
// that OCI policies written for that workload (request.principal.type
// 'workload', its namespace and service_account) govern it. The CCM asks the
// Kubernetes API for a token of that ServiceAccount (a TokenRequest, the
// API server's default audience, as the peer's), and trades it at OKE's
// workload identity endpoint (ociapi/workloadidentity.go, the exchange of the CCM's
// own useWorkloadIdentity) for a resource principal session token.
//
// Signed as the workload, as the peer's: every call of the Load Balancer or
// Network Load Balancer API for that Service (its load balancer read by
// name, created, changed, deleted; its listeners, backend sets,
// certificates, NSG list, work requests), and the lookup of the reserved
// public IP of spec.loadBalancerIP. Signed by the CCM's own principal, as
// the peer's: subnets, instances and VNICs, NSGs (created, read, their
// rules, deleted) and security lists.
//
// Unlike the peer, which asks for a 6-hour token and makes new clients, so
// a new exchange, on every sync: the token asked for lasts 10 minutes (the
// API server's least; it is spent at once), and the session is kept and
// renewed as the CCM's own (ociapi/session.go), one per ServiceAccount, at most
// maxWorkloads of them (the least recently used dropped first). The
// Service's load balancer is never looked for in the shared listings (the
// CCM's view: it may not see a compartment only the workload may, and what
// the workload sees must not answer for other Services): it is read by its
// name, as the workload, on every look.

const (
	// workloadTokenSeconds is how long the ServiceAccount token asked for
	// lasts.
	workloadTokenSeconds = 600
	// maxWorkloads bounds the ServiceAccounts whose sessions are kept.
	maxWorkloads = 256
	// reasonWorkloadIdentity is the Warning of a Service whose
	// ServiceAccount gives no session.
	reasonWorkloadIdentity = "WorkloadIdentityUnavailable"
)

// workloads are the sessions of the ServiceAccounts Services name.
type workloads struct {
	cfg  Config
	kube func() kubernetes.Interface
	now  func() time.Time

	mu       sync.Mutex
	endpoint *ociapi.WorkloadIdentity // OKE's endpoint, once a Service needs it
	byName   map[string]*workload
}

type workload struct {
	sessions *ociapi.SessionCache
	used     time.Time
}

func newWorkloads(cfg Config, kube func() kubernetes.Interface) *workloads {
	return &workloads{cfg: cfg, kube: kube, now: time.Now, byName: map[string]*workload{}}
}

// of are the credentials of ServiceAccount namespace/name.
func (w *workloads) of(namespace, name string) (*ociapi.SessionCache, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := namespace + "/" + name
	if x, ok := w.byName[key]; ok {
		x.used = w.now()
		return x.sessions, nil
	}
	if w.endpoint == nil {
		e, err := ociapi.WorkloadEndpoint(w.cfg.principal().WorkloadIdentity, string(annotation.OCIWorkloadServiceAccount))
		if err != nil {
			return nil, err
		}
		w.endpoint = e
	}
	if len(w.byName) >= maxWorkloads {
		w.dropOldest()
	}
	token := func(ctx context.Context) (string, error) { return w.requestToken(ctx, namespace, name) }
	x := &workload{sessions: w.endpoint.ForServiceAccount(key, token), used: w.now()}
	w.byName[key] = x
	return x.sessions, nil
}

// dropOldest forgets the least recently used ServiceAccount. Call with mu held.
func (w *workloads) dropOldest() {
	oldest := ""
	for k, x := range w.byName {
		if oldest == "" || x.used.Before(w.byName[oldest].used) {
			oldest = k
		}
	}
	delete(w.byName, oldest)
}

// requestToken is a new token of ServiceAccount namespace/name.
func (w *workloads) requestToken(ctx context.Context, namespace, name string) (string, error) {
	kube := w.kube()
	if kube == nil {
		return "", errors.New("the Kubernetes client is not started yet")
	}
	secs := int64(workloadTokenSeconds)
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("ServiceAccount %s/%s does not exist: create it in the Service's namespace (the OCI policies for its load balancer name it), or remove the annotation", namespace, name)
	case apierrors.IsForbidden(err):
		return "", fmt.Errorf("the CCM may not ask for tokens of ServiceAccount %s/%s: it needs create on serviceaccounts/token: set the chart's oci.workloadServiceAccounts=true, or apply deploy/oci/workload-service-accounts-rbac.yaml", namespace, name)
	case err != nil:
		return "", fmt.Errorf("asking the Kubernetes API for a token of ServiceAccount %s/%s: %w", namespace, name, err)
	case tr.Status.Token == "":
		return "", fmt.Errorf("the Kubernetes API gave no token of ServiceAccount %s/%s", namespace, name)
	}
	return tr.Status.Token, nil
}

// as is ctx for the calls about svc: as its ServiceAccount's workload when
// it names one, its session had now (so that a ServiceAccount that does not
// exist, or an exchange refused, is the Service's Warning before any call).
func (st *steps) as(ctx context.Context, svc *v1.Service) (context.Context, error) {
	name, err := annotation.OCIWorkloadServiceAccount.ServiceAccountName(svc)
	switch {
	case errors.Is(err, annotation.ErrNotSet):
		return ctx, nil
	case err != nil:
		return ctx, outcome.Invalid(err)
	}
	creds, err := st.workloads.of(svc.Namespace, name)
	if err == nil {
		_, _, err = creds.SigningKey()
	}
	if err != nil {
		return ctx, outcome.Refuse(reasonWorkloadIdentity, "%s %s: %s; nothing was built or changed for the Service", annotation.OCIWorkloadServiceAccount, name, err.Error())
	}
	return ociapi.AsWorkload(ctx, creds), nil
}
