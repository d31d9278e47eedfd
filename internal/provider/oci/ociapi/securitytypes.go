package ociapi

import "time"

// NSG is a network security group.
type NSG struct {
	ID             string            `json:"id"`
	TimeCreated    time.Time         `json:"timeCreated"`
	DisplayName    string            `json:"displayName"`
	LifecycleState string            `json:"lifecycleState"`
	FreeformTags   map[string]string `json:"freeformTags"`
}

// NSGRule is a rule of a network security group: a security list's rule
// (securityrules.go) with its id and direction.
type NSGRule struct {
	ID        string `json:"id,omitempty"`
	Direction string `json:"direction"`
	SecurityRule
}

// SecurityRule is a security rule, in either direction, as OCI's JSON has it.
type SecurityRule struct {
	Protocol        string      `json:"protocol"`
	Source          string      `json:"source,omitempty"`
	SourceType      string      `json:"sourceType,omitempty"`
	Destination     string      `json:"destination,omitempty"`
	DestinationType string      `json:"destinationType,omitempty"`
	IsStateless     bool        `json:"isStateless"`
	TCPOptions      *TCPOptions `json:"tcpOptions,omitempty"`
	Description     string      `json:"description,omitempty"`
}

// TCPOptions are a TCP rule's ports.
type TCPOptions struct {
	DestinationPortRange *PortRange `json:"destinationPortRange,omitempty"`
	SourcePortRange      *PortRange `json:"sourcePortRange,omitempty"`
}

// PortRange is a range of ports, both ends included.
type PortRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}
