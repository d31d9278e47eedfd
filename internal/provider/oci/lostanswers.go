package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// A create whose answer was lost (a timeout, a connection cut:
// outcome.MayHaveActed) may have made its object all the same, or make it
// later (OCI carries out a request it accepted). Three things keep such a
// create from making a second object:
//
//   - its opc-retry-token is derived from the Service, the object and the
//     create's body (retryToken), stable while a create is retried: OCI
//     answers a create with a token it has seen with the first create's
//     answer instead of making another (oci-go-sdk, e.g.
//     loadbalancer.CreateLoadBalancerRequest.OpcRetryToken: "retried in case
//     of a timeout or server error without risk of executing that same
//     action again. Retry tokens expire after 24 hours"; the same token
//     with another body is 409 InvalidatedRetryToken). Sent on
//     CreateLoadBalancer, CreateNetworkLoadBalancer and
//     CreateNetworkSecurityGroup, the creates of objects found by a name
//     that OCI lets two share; a load balancer's children are unique by
//     name (a second create of one is refused), so theirs need none.
//   - for lostCreateWindow the Service's passes look for the object by its
//     name and marks rather than create it again (provider.Unanswered);
//   - two made anyway (the create's body changed meanwhile, a restart)
//     carry the same marks: the Service keeps the one its status points
//     to, else the oldest, and the others are deleted with a Normal Event
//     (resolveDuplicates, frontendNSG). Two of the name of which one lacks
//     this cluster's marks are not ours to choose between: resolve by hand.

// lostCreateWindow is how long after a create lost its answer its object
// may yet be listed: OCI accepts a create at once (its work request does
// the rest), so an attempt's bound and as long again.
const lostCreateWindow = 60 * time.Second

// retryToken is the opc-retry-token of a create of what for the Service,
// with body and the Service's salt for it: at most 64 characters, OCI's
// bound.
func retryToken(uid types.UID, what, salt string, body any) string {
	h := sha256.New()
	fmt.Fprintf(h, "overcast\x00%s\x00%s\x00%s\x00", uid, what, salt)
	_ = json.NewEncoder(h).Encode(body) // a body of 5,000 backends: not copied thrice
	return hex.EncodeToString(h.Sum(nil))
}

// tokenSalts make a create's token stable only while it is retried: by
// Service and kind, how many of its creates were answered (made, or refused
// for their token) or replaced, in this process (its epoch: a token is
// never one an earlier process used, whose object may have been deleted
// since, and which OCI would answer with it for 24 hours). A create whose
// answer was lost keeps its token; the next create after an answer has
// another.
type tokenSalts struct {
	m     sync.Map
	once  sync.Once
	epoch string
}

func (t *tokenSalts) get(uid types.UID, kind string) string {
	t.once.Do(func() { t.epoch = strconv.FormatInt(time.Now().UnixNano(), 36) })
	v, _ := t.m.Load(string(uid) + "/" + kind)
	n, _ := v.(int)
	return t.epoch + "/" + strconv.Itoa(n)
}

func (t *tokenSalts) bump(uid types.UID, kind string) {
	v, _ := t.m.Load(string(uid) + "/" + kind)
	n, _ := v.(int)
	t.m.Store(string(uid)+"/"+kind, n+1)
}

// lostKey is the key in Cloud.unanswered of the Service's create of what.
func lostKey(svc *v1.Service, what string) string { return string(svc.UID) + "/" + what }

// createAnswered records how a create of what for the Service went: its
// answer lost, it is waited for (and retried with its token); answered,
// forgotten, and the next create has another token. A create refused as a
// conflict of its token gets another token next.
func (st *steps) createAnswered(svc *v1.Service, what string, err error) {
	switch {
	case err == nil:
		st.unanswered.Found(lostKey(svc, what))
		st.salts.bump(svc.UID, what) // the next create is another
	case outcome.MayHaveActed(err):
		st.unanswered.Lost(lostKey(svc, what))
	case isCode(err, "InvalidatedRetryToken"):
		st.salts.bump(svc.UID, what)
	}
}

// awaitingLostCreate is the progress of the Service while the create of
// what lost its answer and its object may yet appear; "" when none.
func (st *steps) awaitingLostCreate(svc *v1.Service, what, name string) string {
	return st.unanswered.Awaiting(lostKey(svc, what), name)
}

// awaitingLB is the Service's load balancer as the cycle sees it while its
// create's answer is waited for (awaitingLostCreate).
func (st *steps) awaitingLB(svc *v1.Service, kind string) (ociLB, bool) {
	msg := st.awaitingLostCreate(svc, kind, noun(kind)+" "+nameOf(svc, kind))
	if msg == "" {
		return ociLB{}, false
	}
	return ociLB{ID: nameOf(svc, kind), Status: msg, State: lbcycle.Busy}, true
}

// keptOf is, of several load balancers of the Service's name, the one the
// Service keeps (its status's address, else the oldest) and the others to
// delete; an error when one of them lacks this cluster's marks for the
// Service (not ours to choose: resolve by hand).
func (st *steps) keptOf(svc *v1.Service, list []ociapi.LB) (ociapi.LB, []ociapi.LB, error) {
	live := slices.DeleteFunc(slices.Clone(list), func(lb ociapi.LB) bool { return lb.LifecycleState == "DELETING" })
	for _, lb := range live {
		if lb.FreeformTags[tagService] != string(svc.UID) || lb.FreeformTags[tagCluster] != st.cluster.Get() {
			return ociapi.LB{}, nil, outcome.Refuse(outcome.ReasonCloudRefused, "%d load balancers are named %s, not all made by this cluster for the Service: resolve by hand (delete all but one)",
				len(live), nameOf(svc, lb.Kind))
		}
	}
	if len(live) == 0 {
		return list[0], nil, nil
	}
	slices.SortFunc(live, func(a, b ociapi.LB) int { return a.TimeCreated.Compare(b.TimeCreated) })
	keep := 0
	for i, lb := range live {
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" && slices.ContainsFunc(lb.IPAddresses, func(a ociapi.LBAddress) bool { return a.IPAddress == in.IP }) {
				keep = i
			}
		}
	}
	kept := live[keep]
	return kept, slices.Delete(live, keep, keep+1), nil
}

// deleteDuplicates deletes the Service's load balancers other than keep,
// each once OCI lets it (not CREATING: the next pass's).
func (st *steps) deleteDuplicates(ctx context.Context, svc *v1.Service, keep ociapi.LB, dups []ociapi.LB) error {
	for _, d := range dups {
		if d.LifecycleState == "CREATING" {
			continue
		}
		wr, err := st.api.DeleteLoadBalancer(ctx, d.Kind, d.ID)
		if err != nil {
			return fmt.Errorf("deleting %s %s, a second one of the Service: %w", noun(d.Kind), d.ID, err)
		}
		st.listings[d.Kind].Invalidate()
		st.events.Eventf(svc, v1.EventTypeNormal, provider.ReasonDeletingDuplicate,
			"Deleting %s %s: made a second time for this Service (a create whose answer was lost); keeping %s (work request %s)", noun(d.Kind), d.ID, keep.ID, wr)
		klog.FromContext(ctx).Info("Deleting a second load balancer of the Service", "service", klog.KObj(svc), "id", d.ID, "keep", keep.ID)
	}
	return nil
}

// isCode says whether err is OCI's answer of code.
func isCode(err error, code string) bool {
	var e *ociapi.Error
	return errors.As(err, &e) && e.Code == code
}

// deleteNSGDuplicates deletes the Service's frontend NSGs other than keep,
// each once no load balancer is in it (OCI refuses before: the load
// balancer is moved to keep first, convergeNSGs).
func (st *steps) deleteNSGDuplicates(ctx context.Context, svc *v1.Service, keep string, others []string) error {
	for _, id := range others {
		err := st.api.DeleteNSG(ctx, id)
		switch {
		case errors.Is(err, outcome.ErrNotFound), errors.Is(err, outcome.ErrBusy), errors.Is(err, outcome.ErrRefused):
			continue // gone, or still in use
		case err != nil:
			return fmt.Errorf("deleting network security group %s, a second one of the Service: %w", id, err)
		}
		st.events.Eventf(svc, v1.EventTypeNormal, provider.ReasonDeletingDuplicate,
			"Deleted network security group %s: made a second time for this Service (a create whose answer was lost); keeping %s", id, keep)
	}
	return nil
}
