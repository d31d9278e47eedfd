//go:build race

package openstack

func init() { listFlags = append(listFlags, "-race") }
