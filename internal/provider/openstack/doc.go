// Package openstack is the OpenStack cloud (--cloud-provider=openstack): a drop-in
// for cloud-provider-openstack that reads its cloud.conf unchanged.
package openstack
