package ociapi

import (
	"net/netip"
	"strings"
)

// regionCodes are the short codes OCI accepts for regions' names (oci-go-sdk
// common/regions.go shortNameRegion), for the regions whose API answers them
// in instance.region too.
var regionCodes = map[string]string{
	"iad": "us-ashburn-1", "phx": "us-phoenix-1", "sjc": "us-sanjose-1", "ord": "us-chicago-1",
	"yyz": "ca-toronto-1", "yul": "ca-montreal-1", "lhr": "uk-london-1", "cwl": "uk-cardiff-1",
	"fra": "eu-frankfurt-1", "ams": "eu-amsterdam-1", "zrh": "eu-zurich-1", "mad": "eu-madrid-1",
	"cdg": "eu-paris-1", "lin": "eu-milan-1", "arn": "eu-stockholm-1", "mrs": "eu-marseille-1",
	"nrt": "ap-tokyo-1", "kix": "ap-osaka-1", "icn": "ap-seoul-1", "yny": "ap-chuncheon-1",
	"bom": "ap-mumbai-1", "hyd": "ap-hyderabad-1", "syd": "ap-sydney-1", "mel": "ap-melbourne-1",
	"sin": "ap-singapore-1", "gru": "sa-saopaulo-1", "vcp": "sa-vinhedo-1", "scl": "sa-santiago-1",
	"jed": "me-jeddah-1", "dxb": "me-dubai-1", "auh": "me-abudhabi-1", "jnb": "af-johannesburg-1",
	"mtz": "il-jerusalem-1", "qro": "mx-queretaro-1", "mty": "mx-monterrey-1",
}

// RegionName is a region's name for its name or short code.
func RegionName(r string) string {
	r = strings.ToLower(strings.TrimSpace(r))
	if name, ok := regionCodes[r]; ok {
		return name
	}
	return r
}

// IsLoopback says whether host is a loopback address or localhost.
func IsLoopback(host string) bool {
	ip, err := netip.ParseAddr(host)
	return host == "localhost" || (err == nil && ip.IsLoopback())
}
