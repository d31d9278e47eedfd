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

// kindError is an error of a kind (ErrForeign, ErrMalformed) with a message of
// its own.
type kindError struct {
	kind error
	msg  string
}

func (e kindError) Error() string { return e.msg }

func (e kindError) Is(target error) bool { return target == e.kind }
