package cloudapi

import (
	"bytes"
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

// maxFormBody is how much of a form-encoded request body commandOf reads to
// find a CloudStack command sent by POST. A longer body is read up to its last
// whole parameter within this much (clients put "command" among the first).
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
// query or else from a form-encoded body, or "" if there is none or it does
// not look like a command name. The query comes first, as in Apache
// CloudStack's ApiServlet, which takes the command from the servlet's
// parameters (query string data before post body data, Servlet spec §3.1),
// and reads the form body of a POST as it reads a query: cloudstack-go's
// writes (PostForm) and overcast's (internal/provider/cloudstack) go that way.
func commandOf(req *http.Request) string {
	if cmd := req.URL.Query().Get("command"); cmd != "" {
		return validCommand(cmd)
	}
	data, whole := formBody(req)
	if !whole {
		// Only the parameters ending before the cut are whole.
		i := bytes.LastIndexByte(data, '&')
		if i < 0 {
			return ""
		}
		data = data[:i]
	}
	form, err := url.ParseQuery(string(data))
	if err != nil {
		return ""
	}
	return validCommand(form.Get("command"))
}

// formBody returns the start (up to maxFormBody bytes) of req's body if it is
// form-encoded, and whether that is the whole body, without taking the body
// from whoever sends or serves req:
//
//   - a client's request (a RoundTripper must not change it) is read through
//     a copy of its body (GetBody), and not at all without one;
//   - a server's request (RequestURI set) has what is read put back in front
//     of the rest of its body, so that its handler reads the body whole.
func formBody(req *http.Request) (data []byte, whole bool) {
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 {
		return nil, true
	}
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, true
	}
	switch {
	case req.GetBody != nil:
		body, err := req.GetBody()
		if err != nil {
			return nil, true
		}
		defer func() { _ = body.Close() }()
		data, err = io.ReadAll(io.LimitReader(body, maxFormBody+1))
		if err != nil {
			return nil, true
		}
	case req.RequestURI != "":
		var err error
		data, err = io.ReadAll(io.LimitReader(req.Body, maxFormBody+1))
		req.Body = putBack{Reader: io.MultiReader(bytes.NewReader(data), req.Body), Closer: req.Body}
		if err != nil {
			return nil, true
		}
	default:
		return nil, true
	}
	if len(data) > maxFormBody {
		return data[:maxFormBody], false
	}
	return data, true
}

// putBack is a server request's body with its start read and put back.
type putBack struct {
	io.Reader
	io.Closer
}

func validCommand(cmd string) string {
	if commandValue.MatchString(cmd) {
		return cmd
	}
	return ""
}
