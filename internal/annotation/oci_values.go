package annotation

// The value types of the OCI table and their parsers.

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// OCIMaxNetworkSecurityGroups is how many network security groups a load
// balancer may join.
const OCIMaxNetworkSecurityGroups = 5

// OCIDs parses a comma-separated list of OCIDs of kind (nsg:
// "networksecuritygroup"), blanks and repeats dropped, at most max (0: any).
func (n Name) OCIDs(svc *v1.Service, kind string, max int) ([]string, error) {
	accepted := fmt.Sprintf("comma-separated OCIDs (ocid1.%s.…)", kind)
	if max > 0 {
		accepted += fmt.Sprintf(", at most %d", max)
	}
	ids, err := parseList(n, svc, accepted, func(item string) (string, error) {
		parts := strings.Split(item, ".")
		if len(parts) < 5 || parts[0] != "ocid1" || parts[1] != kind || parts[len(parts)-1] == "" {
			return "", fmt.Errorf("%q is not one", item)
		}
		return item, nil
	})
	ids = unique(ids)
	if err == nil && max > 0 && len(ids) > max {
		err = &InvalidError{Name: n, Value: svc.Annotations[string(n)], Accepted: accepted, Err: fmt.Errorf("%d given", len(ids))}
	}
	return ids, err
}

// OCID parses one OCID of kind.
func (n Name) OCID(svc *v1.Service, kind string) (string, error) {
	ids, err := n.OCIDs(svc, kind, 1)
	if err == nil && len(ids) == 0 {
		err = &InvalidError{Name: n, Value: "", Accepted: fmt.Sprintf("an OCID (ocid1.%s.…)", kind)}
	}
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// Bandwidth parses a flexible shape's bandwidth: whole Mbps, with or without
// the unit ("100", "100Mbps"), from 10 to 8192.
func (n Name) Bandwidth(svc *v1.Service) (int, error) {
	v, ok := n.lookup(svc)
	if !ok {
		return 0, ErrNotSet
	}
	s := strings.TrimSpace(v)
	if len(s) > 4 && strings.EqualFold(s[len(s)-4:], "mbps") {
		s = strings.TrimSpace(s[:len(s)-4])
	}
	mbps, err := strconv.Atoi(s)
	if err != nil || mbps < 10 || mbps > 8192 {
		return 0, &InvalidError{Name: n, Value: v, Accepted: `whole Mbps from 10 to 8192, such as "100" or "100Mbps"`}
	}
	return mbps, nil
}

// FreeformTags parses JSON freeform tags: {"key": "value"}.
func (n Name) FreeformTags(svc *v1.Service) (map[string]string, error) {
	var tags map[string]string
	return tags, n.JSON(svc, &tags, `JSON {"key": "value"}`)
}

// DefinedTags parses JSON defined tags: {"namespace": {"key": "value"}}.
func (n Name) DefinedTags(svc *v1.Service) (map[string]map[string]any, error) {
	var tags map[string]map[string]any
	return tags, n.JSON(svc, &tags, `JSON {"namespace": {"key": "value"}}`)
}
