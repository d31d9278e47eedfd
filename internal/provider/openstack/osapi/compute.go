package osapi

import (
	"context"
	"net/url"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
)

// Nova's calls (at novaMicroversion: flavors' names and tags).

// GetServer reads a server by id.
func (gw *Client) GetServer(ctx context.Context, id string) (Server, error) {
	return call(ctx, gw, Nova, func(sc *gophercloud.ServiceClient) (Server, error) {
		var got Server
		err := servers.Get(ctx, sc, id).ExtractInto(&got)
		return got, err
	})
}

// ListServers lists the servers the query asks for (details), and the time
// Nova answered the first page (zero without a Date header).
func (gw *Client) ListServers(ctx context.Context, query url.Values) ([]Server, time.Time, error) {
	sc, err := gw.client(ctx, Nova)
	if err != nil {
		return nil, time.Time{}, err
	}
	list, answered, err := listAllAnswered[Server](ctx, sc, "servers", query, "servers", "detail")
	return list, answered, novaErr(err)
}
