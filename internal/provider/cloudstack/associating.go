package cloudstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/lbcycle"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// CloudStack cannot tag an address as it associates it (associateIpAddress
// takes no tags): a process that stops between associateIpAddress and the
// createTags call after it leaves an address that nothing says is anyone's.
// So, just before associating, the time is written on the Service
// (CloudStackAssociating); a pass that finds no address of the Service's
// while the Service carries that time takes up the address associated then:
// untagged, with no rule on it, allocated within associatingWindow after
// that time (on the server's clock, from the Date of its answers). A Service
// deleted meanwhile has it released the same way.
//
// createTags is a job: until it has run, the address of a Service being
// associated now (by the other replica, or by this process before it was
// restarted) is untagged too. An address is taken up only once it is
// tagSettle old; a younger one makes the Service wait (busy), neither
// associating another nor letting go.
//
// Within this process, an address it associated is never taken up for
// another Service (c.tagged, recorded as soon as the association returns;
// an address the server allocated a moment before that is still younger
// than tagSettle), and one Service at a time takes an address up
// (c.takingUp). Associations never wait for a taking up: they would leave
// together, and a cloud that asked to slow down would see a burst.

// associatingWindow is how long after the time written the association it
// stands for may be allocated: it is the next call (a write the client-side
// limit may hold a little).
const associatingWindow = 10 * time.Second

// clockPrecision: the server's dates have whole seconds, and so does what
// we know of its clock.
const clockPrecision = 2 * time.Second

// associatingSlack widens the window when the server's clock is not known
// (an answer without a Date).
const associatingSlack = 2 * time.Minute

// tagSettle is how old an untagged address must be to be taken up: jobs
// take a second or two; an interrupted association's address never gets
// its tags.
const tagSettle = 10 * time.Second

// associatingSince is the time the Service's last association began, as
// written on it.
func associatingSince(svc *v1.Service) (time.Time, bool) {
	v, ok := svc.Annotations[string(annotation.CloudStackAssociating)]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

// noteAssociating writes on the Service that an address is about to be
// associated for it. An error: nothing may be associated (it could not be
// taken up after a crash). Without a client (unit tests of the cloud alone)
// nothing is written.
func (s *steps) noteAssociating(ctx context.Context, svc *v1.Service) error {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	if err := lbcycle.WriteAnnotations(ctx, s.kube(), svc, map[string]any{string(annotation.CloudStackAssociating): now}); err != nil {
		return fmt.Errorf("cannot write %s on the Service before associating its address: %w", annotation.CloudStackAssociating, err)
	}
	return nil
}

// errNotAssociated: the association was not asked for (the time could not
// be written on the Service first).
var errNotAssociated = errors.New("no address was associated")

// associateTagged writes the time on the Service, associates an address for
// it (its job noted) and tags it as the Service's. tagErr is
// the tagging's error: the address was associated, and must be given back.
func (s *steps) associateTagged(ctx context.Context, svc *v1.Service, n csapi.Network, ask string) (id, job, tagJob string, tagErr, err error) {
	if err := s.noteAssociating(ctx, svc); err != nil {
		return "", "", "", nil, fmt.Errorf("%w: %w", errNotAssociated, err)
	}
	id, job, err = s.api.Associate(ctx, n, ask)
	if err != nil {
		return "", "", "", nil, err
	}
	s.jobs.add(svc.UID, job, "associating public address "+id) // started now, not after its tags
	s.tagging(id)
	fctx, cancel := followUp(ctx)
	defer cancel()
	tagJob, tagErr = s.api.Tag(fctx, "PublicIpAddress", []string{id}, s.newTags(svc))
	return id, job, tagJob, tagErr, nil
}

// tagging records that this process associated the address and asks for its
// tags: until the job has surely run, it is not taken up for another Service.
func (s *steps) tagging(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.tagged == nil {
		s.tagged = map[string]time.Time{}
	}
	for k, at := range s.tagged {
		if now.Sub(at) > taggingMemory {
			delete(s.tagged, k)
		}
	}
	s.tagged[id] = now
}

// taggedHere says whether this process asked for the address's tags lately.
func (s *steps) taggedHere(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.tagged[id]
	return ok && time.Since(at) <= taggingMemory
}

// taggingMemory is how long a createTags job this process started is
// trusted to run: much longer than jobs take.
const taggingMemory = 5 * time.Minute

// takeUpLeftover looks, for a Service that carries CloudStackAssociating and
// has no address, for the address its interrupted association left, and
// tags it as the Service's (false: there is none). ip, when set, is the
// only address it can be (the Service's loadBalancerIP). An address younger
// than c.tagSettle (tagSettle) is returned unchanged, with the sentence of
// its settling (the load balancer busy meanwhile).
func (s *steps) takeUpLeftover(ctx context.Context, svc *v1.Service, ip string) (csapi.Address, string, bool, error) {
	since, ok := associatingSince(svc)
	if !ok {
		return csapi.Address{}, "", false, nil
	}
	done, err := s.takingUp.Take(ctx, "another Service's taking up of an address")
	if err != nil {
		return csapi.Address{}, "", false, err
	}
	defer done()
	all, err := s.api.AddressesTagged(ctx, nil)
	if err != nil {
		return csapi.Address{}, "", false, err
	}
	serverNow, known := s.api.ServerNow()
	skew := time.Until(serverNow)
	lo, hi := since.Add(skew-clockPrecision), since.Add(skew+associatingWindow+clockPrecision)
	if !known {
		lo, hi = lo.Add(-associatingSlack), hi.Add(associatingSlack)
	}
	type candidate struct {
		a  csapi.Address
		at time.Time
	}
	var found []candidate
	for _, a := range all {
		if len(a.Tags) > 0 || a.SourceNAT || a.StaticNAT || (ip != "" && a.IP != ip) || s.taggedHere(a.ID) ||
			(!strings.EqualFold(a.State, "Allocated") && !strings.EqualFold(a.State, "Allocating")) {
			continue
		}
		at, err := time.Parse(csapi.DateLayout, a.Allocated)
		if err != nil || at.Before(lo) || at.After(hi) {
			continue
		}
		found = append(found, candidate{a, at})
	}
	// The earliest: the association that followed the time written.
	slices.SortFunc(found, func(x, y candidate) int { return x.at.Compare(y.at) })
	var settling *csapi.Address
	for _, f := range found {
		rules, err := s.api.RulesOn(ctx, f.a.ID)
		if err != nil {
			return csapi.Address{}, "", false, err
		}
		if len(rules) > 0 {
			continue // someone's already: an interrupted association has none
		}
		if serverNow.Sub(f.at) < s.tagSettle {
			if settling == nil {
				settling = &f.a
			}
			continue
		}
		tags := s.newTags(svc)
		job, err := s.api.Tag(ctx, "PublicIpAddress", []string{f.a.ID}, tags)
		if err != nil {
			return csapi.Address{}, "", false, fmt.Errorf("cannot take up public address %s, associated for the Service and left untagged: %w", f.a.IP, err)
		}
		s.tagging(f.a.ID)
		s.jobs.add(svc.UID, job, "tagging public address "+f.a.IP)
		klog.FromContext(ctx).Info("Took up the public address an interrupted association left untagged",
			"service", klog.KObj(svc), "address", f.a.IP, "associating", since.Format(time.RFC3339))
		f.a.Tags = tags
		return f.a, "", true, nil
	}
	if settling != nil {
		// Its tags may be on their way: the Service waits (neither a new
		// address nor, being deleted, letting go) until they come or not.
		return *settling, fmt.Sprintf("waiting to see whether public address %s, untagged, gets its tags (else it is the one whose association was interrupted)", settling.IP), true, nil
	}
	return csapi.Address{}, "", false, nil
}

// followUp is the context of a call that must follow one just made whatever
// happens to its caller (an address just associated gets its tags, or is given
// back when they could not be put): the caller's values without its
// cancellation, bounded on its own.
func followUp(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}
