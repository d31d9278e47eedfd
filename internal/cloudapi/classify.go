package cloudapi

import (
	"context"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

type serviceKey struct{}

// WithService returns a copy of ctx that names the cloud service ("compute",
// "network", "load-balancer", ...) of the requests made with it. OperationFor
// uses it as the service label, since the URL alone does not say which role
// an endpoint plays.
func WithService(ctx context.Context, service string) context.Context {
	return context.WithValue(ctx, serviceKey{}, service)
}

// serviceFrom returns the service set by WithService, if any.
func serviceFrom(ctx context.Context) string {
	s, _ := ctx.Value(serviceKey{}).(string)
	return s
}

var (
	// versionSegment matches API version path segments ("v2", "v2.1", "v3").
	versionSegment = regexp.MustCompile(`^[vV][0-9]+(\.[0-9]+)*$`)
	// dateVersionSegment matches OCI's date versions ("20160918") when they
	// are the first path segment.
	dateVersionSegment = regexp.MustCompile(`^(19|20)[0-9]{2}(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])$`)
	uuidSegment        = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	hexSegment         = regexp.MustCompile(`^[0-9a-fA-F]{16,}$`)
	digitsSegment      = regexp.MustCompile(`^[0-9]+$`)
	// commandValue matches a plausible CloudStack command name; anything else
	// is not used as a label.
	commandValue = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,63}$`)
)

// maxFormBody is the largest form-encoded request body OperationFor reads
// (through GetBody) to find a CloudStack command sent by POST.
const maxFormBody = 64 << 10

// unknown is the label value used when a service or operation cannot be named.
const unknown = "unknown"

// OperationFor is the default Config.Classify. It names a request's service
// and operation from information that is neither secret nor unbounded:
//
//   - service is the value set with WithService on the request's context if
//     any, otherwise the first path segment that is neither a version nor an
//     ID ("unknown" if there is none);
//   - for query-style APIs (CloudStack), operation is the method and the
//     "command" parameter, taken from the query or from a form-encoded body:
//     "GET listVirtualMachines";
//   - otherwise operation is the method and the path template, in which version
//     segments ("v2.0", "v2.1", "v3", and OCI's "20160918" as first segment) are
//     kept and segments that look like IDs become "{id}": UUIDs, hex strings of
//     16 or more characters, all-digit segments, and segments of 8 or more
//     characters that contain a digit. For example "GET /v2.1/servers/{id}".
func OperationFor(req *http.Request) (service, operation string) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if req.URL == nil {
		return orUnknown(serviceFrom(req.Context())), method + " " + unknown
	}

	var template []string
	for _, seg := range strings.Split(req.URL.Path, "/") {
		switch {
		case seg == "":
			continue
		case versionSegment.MatchString(seg), len(template) == 0 && dateVersionSegment.MatchString(seg):
			template = append(template, seg)
		case looksLikeID(seg):
			template = append(template, "{id}")
		default:
			if service == "" {
				service = seg
			}
			template = append(template, seg)
		}
	}
	if s := serviceFrom(req.Context()); s != "" {
		service = s
	}
	service = orUnknown(service)

	if cmd := commandOf(req); cmd != "" {
		return service, method + " " + cmd
	}
	return service, method + " /" + strings.Join(template, "/")
}

func orUnknown(s string) string {
	if s == "" {
		return unknown
	}
	return s
}

// looksLikeID reports whether a path segment is probably a resource ID.
func looksLikeID(seg string) bool {
	return uuidSegment.MatchString(seg) ||
		hexSegment.MatchString(seg) ||
		digitsSegment.MatchString(seg) ||
		(len(seg) >= 8 && strings.ContainsAny(seg, "0123456789"))
}

// commandOf returns the CloudStack-style "command" parameter of req, from the
// query or from a small form-encoded body, or "" if there is none or it does
// not look like a command name.
func commandOf(req *http.Request) string {
	if cmd := req.URL.Query().Get("command"); cmd != "" {
		return validCommand(cmd)
	}
	if req.GetBody == nil || req.ContentLength <= 0 || req.ContentLength > maxFormBody {
		return ""
	}
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer func() { _ = body.Close() }()
	data, err := io.ReadAll(io.LimitReader(body, maxFormBody))
	if err != nil {
		return ""
	}
	form, err := url.ParseQuery(string(data))
	if err != nil {
		return ""
	}
	return validCommand(form.Get("command"))
}

func validCommand(cmd string) string {
	if commandValue.MatchString(cmd) {
		return cmd
	}
	return ""
}
