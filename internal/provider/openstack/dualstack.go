package openstack

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"

	"github.com/overcast-ccm/overcast/internal/annotation"
	"github.com/overcast-ccm/overcast/internal/outcome"
	"github.com/overcast-ccm/overcast/internal/provider/openstack/osapi"
)

// Dual-stack load balancers: one load balancer with a VIP of each family, the
// second one Octavia's additional VIP (API v2.26: Octavia's
// octavia/api/root_controller.py lists it as "Additional VIPs"; the Zed of the
// test harness has it, measured 2026-11-26).

const (
	featureUnknown int32 = iota
	featureYes
	featureNo
)

// additionalVIPsVersion is the Octavia API version with additional VIPs.
const additionalVIPsVersion = 26

// reasonDualStack: a Service that prefers dual-stack got one family.
const reasonDualStack = "DualStackUnavailable"

// octaviaAPI is what the Octavia API's version list says, read once.
type octaviaAPI struct {
	additionalVIPs atomic.Int32
	version        atomic.Value // string: the CURRENT version, e.g. "v2.26"
}

// hasAdditionalVIPs reads Octavia's version list (GET on the endpoint's root)
// the first time, and says whether it has additional VIPs and its version.
func (st *steps) hasAdditionalVIPs(ctx context.Context) (bool, string, error) {
	if v := st.octaviaAPI.additionalVIPs.Load(); v != featureUnknown {
		version, _ := st.octaviaAPI.version.Load().(string)
		return v == featureYes, version, nil
	}
	var body struct {
		Versions []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"versions"`
	}
	if err := st.api.OctaviaVersions(ctx, &body); err != nil {
		return false, "", fmt.Errorf("reading Octavia's API versions: %w", err)
	}
	best, name := -1, ""
	for _, v := range body.Versions {
		minor, ok := strings.CutPrefix(v.ID, "v2.")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(minor); err == nil && n > best {
			best, name = n, v.ID
		}
	}
	has := best >= additionalVIPsVersion
	st.octaviaAPI.version.Store(name)
	if has {
		st.octaviaAPI.additionalVIPs.Store(featureYes)
	} else {
		st.octaviaAPI.additionalVIPs.Store(featureNo)
	}
	return has, name, nil
}

// vipSubnets settles, before a load balancer is created, the subnets its
// VIPs go on where nothing names them: an IPv6 VIP's is the network's IPv6
// subnet; a dual-stack Service's second VIP (its additional VIP, returned)
// goes on the named subnet or the network's one of that family, or, where
// Octavia has no additional VIPs, is left out (a Service that requires both
// is refused).
func (st *steps) vipSubnets(ctx context.Context, svc *v1.Service, spec *lbSpec) ([]osapi.AdditionalVIP, error) {
	if spec.family == v1.IPv6Protocol && spec.subnetID == "" && spec.portID == "" {
		netID, err := st.vipNetwork(ctx, *spec)
		if err != nil {
			return nil, err
		}
		if spec.subnetID, err = st.familySubnet(ctx, netID, v1.IPv6Protocol); err != nil {
			return nil, err
		}
		spec.networkID = ""
	}
	if spec.secondFamily == "" {
		return nil, nil
	}
	has, version, err := st.hasAdditionalVIPs(ctx)
	if err != nil {
		return nil, err
	}
	if !has {
		if spec.requireDual {
			return nil, outcome.Refuse(outcome.ReasonUnsupportedService, "Octavia here (API %s) has no additional VIPs (v2.26), so it cannot make a dual-stack load balancer, which spec.ipFamilyPolicy RequireDualStack asks for; nothing was built", version)
		}
		st.events.Eventf(svc, v1.EventTypeNormal, reasonDualStack, "Octavia here (API %s) has no additional VIPs: the load balancer has an %s address only", version, spec.family)
		spec.secondFamily = ""
		return nil, nil
	}
	subnetID := spec.secondSubnetID
	if subnetID == "" {
		netID, err := st.vipNetwork(ctx, *spec)
		if err != nil {
			return nil, err
		}
		if subnetID, err = st.familySubnet(ctx, netID, spec.secondFamily); err != nil {
			return nil, err
		}
	}
	return []osapi.AdditionalVIP{{SubnetID: subnetID}}, nil
}

// vipNetwork is the network of the VIPs: network-id, else the network of the
// VIP's subnet (or of the cloud.conf's subnet-id).
func (st *steps) vipNetwork(ctx context.Context, s lbSpec) (string, error) {
	if s.networkID != "" {
		return s.networkID, nil
	}
	id := s.subnetID
	if id == "" {
		id = s.vipSubnetOf
	}
	sn, err := st.api.GetSubnet(ctx, id)
	if err != nil {
		return "", fmt.Errorf("reading subnet %s: %w", id, err)
	}
	return sn.NetworkID, nil
}

// familySubnet is the one subnet of the family in the network. None or
// several refuse the Service before anything is built.
func (st *steps) familySubnet(ctx context.Context, netID string, family v1.IPFamily) (string, error) {
	version := 4
	if family == v1.IPv6Protocol {
		version = 6
	}
	all, err := st.api.ListSubnets(ctx, osapi.SubnetQuery{NetworkID: netID, IPVersion: version})
	if err != nil {
		return "", fmt.Errorf("listing the subnets of network %s: %w", netID, err)
	}
	key := "subnet-id"
	if family == v1.IPv6Protocol {
		key = "ipv6-subnet-id"
	}
	switch len(all) {
	case 1:
		return all[0].ID, nil
	case 0:
		return "", outcome.Refuse(outcome.ReasonUnsupportedService, "Network %s has no %s subnet for the Service's %s VIP: add one, or name one with [LoadBalancer] %s or the annotation %s; nothing was built", netID, family, family, key, annotation.OpenStackSubnetID)
	}
	ids := make([]string, 0, len(all))
	for _, sn := range all {
		ids = append(ids, sn.ID)
	}
	return "", outcome.Refuse(outcome.ReasonUnsupportedService, "Network %s has %d %s subnets (%s): name the VIP's with [LoadBalancer] %s or the annotation %s; nothing was built", netID, len(all), family, strings.Join(ids, ", "), key, annotation.OpenStackSubnetID)
}
