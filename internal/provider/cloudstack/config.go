package cloudstack

// The reference page, by make generate.
//go:generate go run ../../../hack/gen-config-docs -file config.go -root Config -title "CloudStack cloud-config" -out ../../../docs/reference/cloudstack-cloud-config.md

import (
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/overcast-ccm/overcast/internal/cfgutil"
	"github.com/overcast-ccm/overcast/internal/provider/cloudstack/csapi"
)

// Config is the peer's cloud-config, read as it reads it (gcfg INI):
//
//	[Global]
//	api-url = https://cloud.example.com/client/api
//	api-key = …
//	secret-key = …
//	project-id = …      ; optional: a project's UUID or name
//	zone = …            ; optional: the zone of the cluster's machines
//	region = …          ; optional: the region label (default: the zone)
//	ssl-no-verify = false
type Config struct {
	// The management server and the account's keys.
	Global Global `ini:"Global"`
	// path is where the cloud-config was read from ("" for a stream): the
	// CCM reads it again for rotated keys.
	path string
}

// Global is the [Global] section.
type Global struct {
	// The management server's API, such as https://cloud.example.com/client/api. Required.
	APIURL string `ini:"api-url"`
	// The API key of the account the CCM acts as (a user's keys are enough). Required.
	APIKey string `ini:"api-key" secret:"true"`
	// The secret key of api-key. A secret: never logged. Required.
	SecretKey string `ini:"secret-key" secret:"true"`
	// Accept any TLS certificate of the management server (for test clouds only).
	// Default: false
	SSLNoVerify bool `ini:"ssl-no-verify"`
	// The project of the cluster's machines and addresses: its UUID or its name.
	// Default: none (the account's own)
	ProjectID string `ini:"project-id"`
	// The zone of the cluster's machines (read for the peer's sake; each Node's zone label is its machine's zone).
	// Default: none
	Zone string `ini:"zone"`
	// The Nodes' topology.kubernetes.io/region label.
	// Default: the machine's zone
	Region string `ini:"region"`
	// Overcast's own: how old the listing of machines may be when the lifecycle
	// controller asks about a NotReady Node (whether its machine is shut down or
	// gone). Shorter finds them sooner, at one listing per that age while any
	// Node is NotReady. A machine missing from the listing is always confirmed
	// by a lookup by id before its Node is deleted.
	// Default: 5m
	LifecycleMaxAge cfgutil.Duration `ini:"lifecycle-max-age"`
	// Overcast's own: client-side limit of read calls (GET) to the management
	// server, per second, with a burst of twice as many.
	// Default: 100
	APIReadQPS int `ini:"api-read-qps"`
	// Overcast's own: client-side limit of write calls (POST), per second, with a
	// burst of twice as many. A new load balancer takes five writes (the address,
	// its tags, a rule, its machines, an opening), so this bounds how fast many
	// Services get theirs. A server with api.throttling.enabled allows 25 calls a
	// second per account by default (api.throttling.max): set both limits below it.
	// Default: 100
	APIWriteQPS int `ini:"api-write-qps"`
}

// Read parses a cloud-config, reporting every problem of its form at once
// (an unknown section or key, a key given twice, a value of the wrong type),
// each with its line.
func Read(r io.Reader) (Config, error) {
	c, path, err := cfgutil.Read[Config](r, "the cloudstack cloud needs a cloud-config with [Global] api-url, api-key and secret-key", cfgutil.DecodeINI)
	c.path = path
	return c, err
}

// Reread reads the file the config came from again (the config itself when
// it came from a stream).
func (c *Config) Reread() (Config, error) { return cfgutil.Reread(c.path, *c, Read) }

// Validate reports every problem of the values at once, each with its key.
// The secret key is never repeated in an error.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	g := c.Global
	switch u, err := url.Parse(g.APIURL); {
	case g.APIURL == "":
		add("[Global] api-url: required (the management server's API, e.g. https://cloud.example.com/client/api)")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		add("[Global] api-url: %q is not an http(s) URL", redactURL(g.APIURL))
	case u.User != nil:
		add("[Global] api-url: must not carry credentials (use api-key and secret-key)")
	}
	if g.APIKey == "" {
		add("[Global] api-key: required")
	}
	if g.SecretKey == "" {
		add("[Global] secret-key: required")
	}
	cfgutil.CheckGlobal(add, g.APIReadQPS, g.APIWriteQPS, g.LifecycleMaxAge)
	return errors.Join(errs...)
}

// redactURL is the URL without user info and query, for errors.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// RegionOf is the region label of a machine in zone: the configured region,
// else the zone, as the peer labels it.
func (c *Config) RegionOf(zone string) string {
	if c.Global.Region != "" {
		return c.Global.Region
	}
	return zone
}

// settings are the client's: the keys it calls the management server with.
func (g Global) settings() csapi.Settings {
	return csapi.Settings{APIURL: g.APIURL, APIKey: g.APIKey, SecretKey: g.SecretKey, SSLNoVerify: g.SSLNoVerify,
		ProjectID: g.ProjectID, ReadQPS: g.APIReadQPS, WriteQPS: g.APIWriteQPS}
}
