package oci

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/oci/ociapi"
)

// Converge makes one change toward spec: the backend sets first (a listener
// needs its set), then the listeners, then what is no longer asked.
func (st *steps) Converge(ctx context.Context, svc *v1.Service, spec lbSpec, lb ociLB) (string, error) {
	ctx, err := st.as(ctx, svc)
	if err != nil {
		return "", err
	}
	return st.converge(ctx, svc, spec, lb)
}

// converge is Converge, ctx the Service's principal's.
func (st *steps) converge(ctx context.Context, svc *v1.Service, spec lbSpec, lb ociLB) (string, error) {
	have := lb.Obj
	change := func(wr string, err error, what string) (string, error) {
		if err != nil {
			return "", err
		}
		st.wrs.start(svc, have.Kind, wr, what)
		return fmt.Sprintf("%s %s: %s (work request %s)", noun(have.Kind), lb.ID, what, wr), nil
	}
	// write creates or updates one child of the load balancer: named in the
	// path only to update, where its body names it not.
	write := func(update bool, kind, name string, body, unnamedBody any, what string) (string, error) {
		if !update {
			wr, err := st.api.CreateChild(ctx, have.Kind, lb.ID, kind, body)
			return change(wr, err, "creating "+what)
		}
		wr, err := st.api.UpdateChild(ctx, have.Kind, lb.ID, kind, name, unnamedBody)
		return change(wr, err, "updating "+what)
	}
	remove := func(kind, name, what string) (string, error) {
		wr, err := st.api.DeleteChild(ctx, have.Kind, lb.ID, kind, name)
		return change(wr, err, "deleting "+what)
	}
	if msg, err := st.convergeFirst(ctx, spec, lb, change); msg != "" || err != nil {
		return msg, err
	}
	// Certificates first (a listener needs its own), under the names this
	// load balancer gives the Secrets' certificates.
	names := certNames(have, spec)
	for _, secret := range slices.Sorted(maps.Keys(spec.certs)) {
		name := names[secret]
		if _, ok := have.Certificates[name]; !ok {
			c := spec.certs[secret]
			c.CertificateName = name
			wr, err := st.api.CreateCertificate(ctx, lb.ID, c)
			return change(wr, err, "creating certificate "+name+" (of Secret "+spec.tls[secret].String()+")")
		}
	}
	spec = withCertNames(spec, names)
	if spec.ruleSets == nil {
		spec = keepRuleSetNames(spec, have)
	} else if name, update := childChange(spec.ruleSets, have.RuleSets, sameRuleSet); name != "" {
		want := spec.ruleSets[name]
		named := want
		named.Name = name
		return write(update, "ruleSets", name, named, want, "rule set "+name)
	}
	if name, update := childChange(spec.backendSets, have.BackendSets, sameBackendSet); name != "" {
		want := spec.backendSets[name]
		return write(update, "backendSets", name, want, unnamed(want), "backend set "+name)
	}
	if name, update := childChange(spec.listeners, have.Listeners, sameListener); name != "" {
		want := spec.listeners[name]
		if l := listenerOnPort(have, want); !update && l != "" {
			return remove("listeners", l, "listener "+l+" (its port is "+name+"'s)")
		}
		return write(update, "listeners", name, want, unnamedListener(want), "listener "+name)
	}
	if name := unasked(have.Listeners, spec.listeners); name != "" {
		return remove("listeners", name, "listener "+name)
	}
	if name := unasked(have.BackendSets, spec.backendSets); name != "" {
		return remove("backendSets", name, "backend set "+name)
	}
	if name := unasked(have.RuleSets, spec.ruleSets); spec.ruleSets != nil && name != "" {
		return remove("ruleSets", name, "rule set "+name)
	}
	if name := staleCertificate(have, spec, names); name != "" {
		return remove("certificates", name, "certificate "+name+" (its Secret was renewed)")
	}
	if msg, err := st.convergeLoadBalancer(ctx, svc, spec, lb, change); msg != "" || err != nil {
		return msg, err
	}
	if msg := shapeDrift(have, spec); msg != "" {
		return "", outcome.Refuse(outcome.ReasonUnsupportedService, "%s", msg)
	}
	return st.removeOtherKind(ctx, svc, spec.kind)
}

// convergeFirst is what comes before any change of the children: what can
// never change is refused before any write (an nlb's assigned addresses),
// then an nlb gains the IP family its new listeners need.
func (st *steps) convergeFirst(ctx context.Context, spec lbSpec, lb ociLB,
	change func(wr string, err error, what string) (string, error)) (string, error) {
	if msg := assignedDrift(lb.Obj, spec); msg != "" {
		return "", outcome.Refuse(outcome.ReasonUnsupportedService, "%s", msg)
	}
	return st.convergeIPVersion(ctx, spec, lb, true, change)
}

// convergeLoadBalancer changes the load balancer itself, once its children
// are as asked: an nlb's IP version (the families it loses), its NSGs.
func (st *steps) convergeLoadBalancer(ctx context.Context, svc *v1.Service, spec lbSpec, lb ociLB,
	change func(wr string, err error, what string) (string, error)) (string, error) {
	if msg, err := st.convergeIPVersion(ctx, spec, lb, false, change); msg != "" || err != nil {
		return msg, err
	}
	return st.convergeNSGs(ctx, svc, spec, lb, change)
}

// convergeNSGs puts the load balancer in the NSGs the Service asks for (its
// own, and its frontend NSG in NSG mode, made first), one step; an NSG it
// leaves that is the Service's frontend NSG is deleted once it is out.
func (st *steps) convergeNSGs(ctx context.Context, svc *v1.Service, spec lbSpec, lb ociLB,
	change func(wr string, err error, what string) (string, error)) (string, error) {
	have := lb.Obj
	front, made, err := st.ensureFrontendNSG(ctx, svc, spec)
	if made != "" || err != nil {
		return made, err
	}
	want := wantedNSGs(spec, front)
	got := slices.Sorted(slices.Values(have.NetworkSecurityGroupIDs))
	if !slices.Equal(want, got) {
		st.nsgsLeft.put(svc.UID, slices.DeleteFunc(got, func(id string) bool { return slices.Contains(want, id) }))
		wr, err := st.api.SetNSGs(ctx, have.Kind, lb.ID, want)
		return change(wr, err, "setting its network security groups")
	}
	for _, id := range st.nsgsLeft.take(svc.UID) {
		g, err := st.api.NSG(ctx, id)
		if errors.Is(err, outcome.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", err
		}
		if g.FreeformTags["ServiceUid"] == string(svc.UID) {
			if err := st.api.DeleteNSG(ctx, id); err != nil && !errors.Is(err, outcome.ErrNotFound) {
				st.nsgsLeft.put(svc.UID, []string{id})
				return "", err
			}
			return fmt.Sprintf("network security group %s deleted (the Service's rules are no longer in NSGs)", id), nil
		}
	}
	return "", nil
}

// removeOtherKind deletes the Service's load balancer of the kind it no
// longer asks for (its type annotation changed), once the one it asks for
// is built: one call, then the Service is looked at again until it is gone.
func (st *steps) removeOtherKind(ctx context.Context, svc *v1.Service, kind string) (string, error) {
	other := ociapi.KindLB
	if kind == ociapi.KindLB {
		other = ociapi.KindNLB
	}
	if asking := st.asking(svc); asking != "" {
		return asking, nil
	}
	old, found, err := st.listed(ctx, svc, other)
	if err != nil || !found || old.LifecycleState == "DELETING" || old.LifecycleState == "DELETED" {
		return "", err
	}
	wr, err := st.api.DeleteLoadBalancer(ctx, other, old.ID)
	if errors.Is(err, outcome.ErrNotFound) {
		st.listings[other].Invalidate()
		return "", nil
	}
	if err != nil {
		return "", err
	}
	st.listings[other].Invalidate()
	return fmt.Sprintf("%s %s is no longer asked for (the Service asks for a%s): deleting it (work request %s)", noun(other), old.ID,
		map[string]string{ociapi.KindLB: " load balancer", ociapi.KindNLB: " network load balancer"}[kind], wr), nil
}

// keepRuleSetNames is spec with the listeners' rule sets as have's: rule
// sets are left as they are when the Service does not ask for any (as the
// peer leaves them).
func keepRuleSetNames(spec lbSpec, have ociapi.LB) lbSpec {
	ls := maps.Clone(spec.listeners)
	for name, l := range ls {
		l.RuleSetNames = have.Listeners[name].RuleSetNames
		ls[name] = l
	}
	spec.listeners = ls
	return spec
}

// childChange is the first child (by name) of a kind that want asks and have
// lacks (to create) or has otherwise (update); "" when have has them all as
// asked.
func childChange[T any](want, have map[string]T, same func(got, want T) bool) (name string, update bool) {
	for _, name := range slices.Sorted(maps.Keys(want)) {
		got, ok := have[name]
		if !ok {
			return name, false
		}
		if !same(got, want[name]) {
			return name, true
		}
	}
	return "", false
}

// unasked is the first child (by name) have has and want does not ask.
func unasked[T any](have, want map[string]T) string {
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[name]; !ok {
			return name
		}
	}
	return ""
}

// shapeDrift says what cannot be changed in place yet.
func shapeDrift(have ociapi.LB, spec lbSpec) string {
	switch {
	case spec.ip != "" && address(have, false) != spec.ip:
		return fmt.Sprintf("load balancer %s has the address %s and the Service asks for %s: a load balancer's address cannot change once built; delete and recreate the Service",
			have.ID, address(have, false), spec.ip)
	case have.IsPrivate != spec.internal:
		return fmt.Sprintf("load balancer %s is %s and the Service asks for it %s: this cannot change once built; delete and recreate the Service",
			have.ID, privacy(have.IsPrivate), privacy(spec.internal))
	case !slices.Equal(slices.Sorted(slices.Values(have.SubnetIDs)), slices.Sorted(slices.Values(spec.subnets))):
		return fmt.Sprintf("load balancer %s is on subnets %s and the Service asks for %s: subnets cannot change once built",
			have.ID, strings.Join(have.SubnetIDs, ", "), strings.Join(spec.subnets, ", "))
	}
	return ""
}

// listenerOnPort is the listener of lb on want's port and IP version.
func listenerOnPort(lb ociapi.LB, want ociapi.Listener) string {
	for name, l := range lb.Listeners {
		if l.Port == want.Port && sameVersion(l.IPVersion, want.IPVersion) {
			return name
		}
	}
	return ""
}

// unnamed is bs as an update's body (UpdateBackendSetDetails has no name).
func unnamed(bs ociapi.BackendSet) ociapi.BackendSet { bs.Name = ""; return bs }

// unnamedListener is l as an update's body (UpdateListenerDetails has no name).
func unnamedListener(l ociapi.Listener) ociapi.Listener { l.Name = ""; return l }
