package openstack

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Server create (Compute API reference, "Create Server"): 202 with the
// server's id, links and admin password, Location naming it; the server is
// ACTIVE at once, with a port on each network asked for (or the fixture's,
// networks "auto" or absent).

// novaErr answers a in Nova's format.
func novaErr(w http.ResponseWriter, a *apiErr) { novaError(w, a.code, a.msg) }

// serverReq is a server create's body, the parts the emulator reads.
type serverReq struct {
	Name       string            `json:"name"`
	FlavorRef  string            `json:"flavorRef"`
	ImageRef   string            `json:"imageRef"`
	AZ         string            `json:"availability_zone"`
	KeyName    string            `json:"key_name"`
	Networks   json.RawMessage   `json:"networks"`
	Metadata   map[string]string `json:"metadata"`
	Tags       []string          `json:"tags"`
	AdminPass  string            `json:"adminPass"`
	DiskConfig string            `json:"OS-DCF:diskConfig"`
}

// serverNet is one entry of a create's networks.
type serverNet struct {
	UUID string `json:"uuid"`
	Port string `json:"port"`
}

// serverPlan is a server create checked as far as it can be alone.
type serverPlan struct {
	req  serverReq
	nets []serverNet
	auto bool // the fixture's network
}

// decodeServer reads a create and checks its name, flavorRef and networks.
func decodeServer(r *http.Request, p *serverPlan) *apiErr {
	var b struct {
		Server serverReq `json:"server"`
	}
	if err := decodeJSON(r, &b); err != nil {
		return errf(400, "", "%s", "Malformed request body: "+err.Error())
	}
	p.req = b.Server
	if strings.TrimSpace(p.req.Name) == "" || len(p.req.Name) > 255 {
		return errf(400, "", "%s", "Invalid input for field/attribute name. Value: "+p.req.Name+".")
	}
	if p.req.FlavorRef == "" {
		return errf(400, "", "Invalid input for field/attribute flavorRef. Value: None. None is not of type 'string', 'integer'")
	}
	return p.parseNetworks()
}

// parseNetworks reads networks: a list of {"uuid"|"port"} or "auto"/"none";
// absent means auto.
func (p *serverPlan) parseNetworks() *apiErr {
	p.auto = true
	raw := p.req.Networks
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var word string
	if json.Unmarshal(raw, &word) == nil {
		switch word {
		case "auto":
		case "none":
			p.auto = false
		default:
			return errf(400, "", "%s", "Invalid input for field/attribute networks. Value: "+word+".")
		}
		return nil
	}
	if err := json.Unmarshal(raw, &p.nets); err != nil {
		return errf(400, "", "%s", "Invalid input for field/attribute networks: "+err.Error())
	}
	p.auto = false
	return nil
}

// createServer checks the flavor, image, availability zone and networks,
// then adds the server with its ports.
func (e *Emulator) createServer(r *http.Request, p *serverPlan, now time.Time) (core.Reply, *apiErr) {
	req := &p.req
	if aerr := e.checkServerRefs(req); aerr != nil {
		return core.Reply{}, aerr
	}
	netIDs, aerr := e.serverNetworks(p)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	s := &server{ID: e.newID(), Name: req.Name, Status: "ACTIVE", FlavorID: req.FlavorRef, ImageID: req.ImageRef,
		AZ: req.AZ, UserID: e.fx.UserID, HostID: hostID(e.fx.ProjectID), KeyName: req.KeyName,
		Created: now, Updated: now, Metadata: nonNilMap(req.Metadata), Tags: nonNil(req.Tags)}
	if aerr := e.addServer(s, netIDs, false, now); aerr != nil {
		return core.Reply{}, aerr
	}
	pass := req.AdminPass
	if pass == "" {
		pass = strings.ReplaceAll(e.newID(), "-", "")[:12]
	}
	diskConfig := req.DiskConfig
	if diskConfig == "" {
		diskConfig = "AUTO"
	}
	return core.Reply{Status: http.StatusAccepted, Header: map[string]string{"Location": baseURL(r) + novaPrefix + "/servers/" + s.ID},
		Body: keyed("server", map[string]any{
			"id": s.ID, "links": e.novaLinks(baseURL(r), "servers", s.ID), "adminPass": pass,
			"OS-DCF:diskConfig": diskConfig, "security_groups": []map[string]string{{"name": "default"}},
		})}, nil
}

// checkServerRefs checks the flavor, the image (if any) and the
// availability zone (the fixture's, the default).
func (e *Emulator) checkServerRefs(req *serverReq) *apiErr {
	if _, ok := e.flavors.Get(req.FlavorRef); !ok {
		return errf(400, "", "%s", "Flavor "+req.FlavorRef+" could not be found.")
	}
	if req.ImageRef != "" {
		if _, ok := e.images[req.ImageRef]; !ok {
			return errf(400, "", "%s", "Image "+req.ImageRef+" could not be found.")
		}
	}
	if req.AZ == "" {
		req.AZ = e.fx.AvailabilityZone
	} else if req.AZ != e.fx.AvailabilityZone {
		return errf(400, "", "The requested availability zone is not available")
	}
	return nil
}

// serverNetworks are the networks a new server gets a port on.
func (e *Emulator) serverNetworks(p *serverPlan) ([]string, *apiErr) {
	var netIDs []string
	if p.auto {
		netIDs = []string{e.fx.NetworkID}
	}
	for _, n := range p.nets {
		if n.Port != "" {
			return nil, errf(400, "", "The emulator does not support booting with a pre-created port.")
		}
		netIDs = append(netIDs, n.UUID)
	}
	return netIDs, nil
}
