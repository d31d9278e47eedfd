package openstack

import (
	"context"
	"net/url"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
)

// Nova's calls (at novaMicroversion: flavors' names and tags).

// getServer reads a server by id.
func (gw *gateway) getServer(ctx context.Context, id string) (server, error) {
	return call(ctx, gw, svcCompute, func(sc *gophercloud.ServiceClient) (server, error) {
		var got server
		err := servers.Get(ctx, sc, id).ExtractInto(&got)
		return got, err
	})
}

// listServers lists the servers the query asks for (details), and the time
// Nova answered the first page (zero without a Date header).
func (gw *gateway) listServers(ctx context.Context, query url.Values) ([]server, time.Time, error) {
	sc, err := gw.client(ctx, svcCompute)
	if err != nil {
		return nil, time.Time{}, err
	}
	list, answered, err := listAllAnswered[server](ctx, sc, "servers", query, "servers", "detail")
	return list, answered, novaErr(err)
}
