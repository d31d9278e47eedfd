package osapi

import (
	"encoding/json"
	"fmt"
)

// RequestBody is what the client sends for opts, one of the write or query
// types of this package: a write's JSON body, or (for a FloatingIPQuery or a
// SubnetQuery) the listing's query string, JSON-quoted. It is built by the
// very conversions the calls use, so that the provider's tests can pin the
// wire field for field from its own specs.
func RequestBody(opts any) (string, error) {
	v, err := wireOf(opts)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// wireOf is what opts is sent as, before its encoding.
func wireOf(opts any) (any, error) {
	switch o := opts.(type) {
	case LoadBalancerCreate:
		return map[string]any{"loadbalancer": loadBalancerCreateOpts(o)}, nil
	case ListenerCreate:
		return listenerCreateOpts(o).ToListenerCreateMap()
	case ListenerUpdate:
		return listenerUpdateOpts(o).ToListenerUpdateMap()
	case PoolCreate:
		return poolCreateOpts(o).ToPoolCreateMap()
	case MonitorCreate:
		return monitorCreateOpts(o).ToMonitorCreateMap()
	case MonitorUpdate:
		return monitorUpdateOpts(o).ToMonitorUpdateMap()
	case []PoolMember:
		return map[string]any{"members": memberBatchOpts(o)}, nil
	case PoolMember:
		return memberCreateOpts(o).ToMemberCreateMap()
	case FloatingIPCreate:
		return floatingIPCreateOpts(o).ToFloatingIPCreateMap()
	case FloatingIPQuery:
		return floatingIPListOpts(o).ToFloatingIPListQuery()
	case SubnetQuery:
		return subnetListOpts(o).ToSubnetListQuery()
	}
	return nil, fmt.Errorf("osapi: %T is not a request this client sends", opts)
}
