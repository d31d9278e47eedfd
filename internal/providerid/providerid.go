// Package providerid is each cloud's form of a Node's spec.providerID, in one
// place: how it is written for a new Node, and how one written by this CCM or
// by the cloud's own CCM is read. A Node's providerID never changes, so every
// form a peer ever wrote is read as it is.
package providerid

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrForeign is a providerID of another cloud. Such a Node is never taken
	// for one whose machine is gone.
	ErrForeign = errors.New("providerID belongs to another cloud")
	// ErrMalformed is a providerID with the cloud's scheme but not its form.
	ErrMalformed = errors.New("malformed providerID")
)

// OpenStackPrefix is the scheme of OpenStack providerIDs.
const OpenStackPrefix = "openstack://"

// OpenStack is the providerID of a server: openstack:///<server UUID>, as
// cloud-provider-openstack writes it.
func OpenStack(serverID string) string { return OpenStackPrefix + "/" + serverID }

// ParseOpenStack is the server UUID of an OpenStack providerID:
// openstack:///<UUID>, or openstack://<region>/<UUID> (cloud-provider-openstack
// with a region). "" for "".
func ParseOpenStack(providerID string) (string, error) {
	if providerID == "" {
		return "", nil
	}
	rest, ok := strings.CutPrefix(providerID, OpenStackPrefix)
	if !ok {
		return "", kindError{ErrForeign, fmt.Sprintf("providerID %q does not belong to OpenStack (want %s/<server UUID>)", providerID, OpenStackPrefix)}
	}
	_, id, found := strings.Cut(rest, "/")
	if !found || id == "" || strings.Contains(id, "/") {
		return "", kindError{ErrMalformed, fmt.Sprintf("malformed providerID %q (want %s/<server UUID>)", providerID, OpenStackPrefix)}
	}
	return id, nil
}

// LocalPrefix is the scheme of the local cloud's providerIDs.
const LocalPrefix = "local://"

// Local is the providerID of a local instance: local://<instance name>.
func Local(name string) string { return LocalPrefix + name }

// ParseLocal is the instance name of a local providerID. "" for "".
func ParseLocal(providerID string) (string, error) {
	if providerID == "" {
		return "", nil
	}
	name, ok := strings.CutPrefix(providerID, LocalPrefix)
	if !ok {
		return "", kindError{ErrForeign, fmt.Sprintf("providerID %q does not belong to the local cloud (want %s<name>)", providerID, LocalPrefix)}
	}
	if name == "" {
		return "", kindError{ErrMalformed, fmt.Sprintf("malformed providerID %q (want %s<name>)", providerID, LocalPrefix)}
	}
	return name, nil
}

// CloudStackPrefix is the scheme of CloudStack providerIDs as
// cloudstack-kubernetes-provider writes them (its provider name).
const CloudStackPrefix = "external-cloudstack://"

// CloudStack is the providerID of a virtual machine, in the peer's form
// (external-cloudstack://<VM UUID>), so that an operator can switch between
// the peer and overcast-ccm in either direction: a Node's providerID never
// changes.
func CloudStack(vmID string) string { return CloudStackPrefix + vmID }

// ParseCloudStack is the VM UUID of a CloudStack providerID, in every form the
// peer wrote: external-cloudstack://<UUID>, a bare UUID (its versions before
// 1.0), and cloudstack:///<UUID> or cloudstack://<UUID>. "" for "".
func ParseCloudStack(providerID string) (string, error) {
	if providerID == "" {
		return "", nil
	}
	id := providerID
	for _, prefix := range []string{CloudStackPrefix, "cloudstack:///", "cloudstack://"} {
		if rest, ok := strings.CutPrefix(providerID, prefix); ok {
			id = rest
			break
		}
	}
	if id == providerID && strings.Contains(providerID, "://") {
		return "", kindError{ErrForeign, fmt.Sprintf("providerID %q does not belong to CloudStack (want %s<VM UUID>)", providerID, CloudStackPrefix)}
	}
	if !isUUID(id) {
		return "", kindError{ErrMalformed, fmt.Sprintf("malformed providerID %q (want %s<VM UUID>)", providerID, CloudStackPrefix)}
	}
	return id, nil
}

// isUUID says whether s is a UUID in its text form (8-4-4-4-12 hex digits).
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
				return false
			}
		}
	}
	return true
}

// kindError is an error of a kind (ErrForeign, ErrMalformed) with a message of
// its own.
type kindError struct {
	kind error
	msg  string
}

func (e kindError) Error() string { return e.msg }

func (e kindError) Is(target error) bool { return target == e.kind }
