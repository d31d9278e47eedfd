package osapi

// Settings are how the session reaches and authenticates to Keystone: the
// cloud.conf's [Global] keys of the same names (the provider's config.go
// documents each), without the provider's own (credentials-file,
// lifecycle-max-age). A password, secret or token is never logged.
type Settings struct {
	AuthURL, EndpointType, Region string
	// TLS: the CAs of the endpoints, a client certificate, or no check.
	CAFile, CertFile, KeyFile string
	TLSInsecure               bool

	// A password: the user's, scoped to the project (tenant) of a domain.
	Username, UserID, Password                         string
	DomainID, DomainName, UserDomainID, UserDomainName string
	TenantID, TenantName                               string
	TenantDomainID, TenantDomainName                   string
	// A trust: the trustee acts for the trustor.
	TrustID, TrusteeID, TrusteePassword string
	// An application credential (it carries its own project scope).
	ApplicationCredentialID, ApplicationCredentialName, ApplicationCredentialSecret string
	// A token used as it is.
	Token string
	// An entry of a clouds.yaml instead of the above.
	UseClouds         bool
	CloudsFile, Cloud string

	// Client-side limits of reads and writes per second (0: the defaults).
	APIReadQPS, APIWriteQPS int
}
