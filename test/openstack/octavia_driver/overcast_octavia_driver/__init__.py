"""Octavia network driver of the overcast OpenStack test harness.

Octavia runs with no-op amphora and compute drivers (no VMs). Its own no-op *network*
driver then invents every VIP (198.51.100.1 on a port that does not exist in Neutron), so
no floating IP can be attached to a load balancer's ``vip_port_id``. This driver keeps the
no-op behaviour for everything that touches amphorae, and hands the VIP and the look-ups
to Octavia's real Neutron driver (allowed_address_pairs): the VIP is a real Neutron port
in the load balancer's project, with Octavia's VIP security group, as in a real cloud.

Loaded through PYTHONPATH (the dist-info folder beside this package carries the entry
point ``octavia.network.drivers: overcast_network_driver``); nothing is installed.
"""

from oslo_log import log as logging

from octavia.network import base
from octavia.network.drivers.neutron import allowed_address_pairs
from octavia.network.drivers.noop_driver import driver as noop

LOG = logging.getLogger(__name__)


class NetworkDriver(noop.NoopNetworkDriver):
    """No-op amphora plumbing, real Neutron VIPs and look-ups."""

    def __init__(self):
        super().__init__()
        self._neutron = None

    @property
    def neutron(self):
        # Created on first use, so that a service starts even while Neutron is down.
        if self._neutron is None:
            self._neutron = allowed_address_pairs.AllowedAddressPairsDriver()
        return self._neutron

    # The VIP: a real port (and security group) in Neutron.
    def allocate_vip(self, loadbalancer):
        return self.neutron.allocate_vip(loadbalancer)

    def deallocate_vip(self, vip):
        self.neutron.deallocate_vip(vip)

    def update_vip_sg(self, load_balancer, vip):
        return self.neutron.update_vip_sg(load_balancer, vip)

    def update_vip(self, loadbalancer, for_delete=False):
        self.neutron.update_vip(loadbalancer, for_delete)

    # Look-ups answer from Neutron.
    def get_network(self, network_id, context=None):
        return self.neutron.get_network(network_id, context=context)

    def get_subnet(self, subnet_id, context=None):
        return self.neutron.get_subnet(subnet_id, context=context)

    def get_port(self, port_id, context=None):
        try:
            return self.neutron.get_port(port_id, context=context)
        except base.PortNotFound:
            # Ports of the no-op amphorae exist only in the no-op driver's memory.
            return self.driver.get_port(port_id)

    def get_qos_policy(self, qos_policy_id, context=None):
        return self.neutron.get_qos_policy(qos_policy_id, context=context)

    def qos_enabled(self):
        return self.neutron.qos_enabled()

    def get_security_group(self, sg_name):
        return self.neutron.get_security_group(sg_name)

    def get_network_ip_availability(self, network):
        return self.neutron.get_network_ip_availability(network)

    # Member subnets are "plugged" into no-op amphorae; the port handed back must name the
    # subnet's real network, because the flow looks that network up in Neutron next.
    def _real_network_id(self, subnet_id):
        try:
            return self.neutron.get_subnet(subnet_id).network_id
        except base.SubnetNotFound:
            return None

    def plug_fixed_ip(self, port_id, subnet_id, ip_address=None):
        port = self.driver.plug_fixed_ip(port_id, subnet_id, ip_address)
        network_id = self._real_network_id(subnet_id)
        if network_id:
            port.network_id = network_id
        return port

    def unplug_fixed_ip(self, port_id, subnet_id):
        port = self.driver.unplug_fixed_ip(port_id, subnet_id)
        if port is None:
            port = self.driver.get_port(port_id)
        network_id = self._real_network_id(subnet_id)
        if network_id:
            port.network_id = network_id
        return port
