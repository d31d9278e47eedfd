package cloudapi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// NotAPIError is an answer that no cloud API gives: an HTML page, an error
// without a body, an error whose body is not JSON. It comes from something
// else at the URL (a wrong path, a login portal, a proxy), so it says the
// status, the host and what to check; the body is never shown.
type NotAPIError struct {
	// Cloud is the cloud whose API was asked ("cloudstack").
	Cloud string
	// Status is the HTTP status line's code and text ("404 Not Found").
	Status string
	// Host and Path are where the answer came from.
	Host, Path string
	// Body says what the body was ("an empty body", "an HTML page").
	Body string
	// Endpoint names what sets the URL, to check ("[Global] api-url").
	Endpoint string
}

func (e *NotAPIError) Error() string {
	return fmt.Sprintf("%s answered %s with %s for %s, which is not an answer of the %s API (%s): check %s, with its path",
		e.Host, e.Status, e.Body, e.Path, e.Cloud, e.cause(), e.Endpoint)
}

// cause is the likeliest reason for such an answer.
func (e *NotAPIError) cause() string {
	switch {
	case strings.HasPrefix(e.Status, "404"), strings.HasPrefix(e.Status, "405"):
		return "a wrong URL or path"
	case strings.HasPrefix(e.Status, "5"):
		return "a proxy or gateway in front of it, or a wrong URL"
	case strings.Contains(e.Body, "HTML"):
		return "a web page, such as a login portal or a proxy's page, at that URL"
	}
	return "something else answers at that URL"
}

// peekSize is how much of a body is looked at to tell an API's answer.
const peekSize = 512

// notAPI says how resp is not an answer of an API that answers JSON ("" when
// it may be one, or the API is not said to: Config.AnswersJSON), leaving
// resp's body to be read whole.
func (t *transport) notAPI(req *http.Request, resp *http.Response) string {
	if !t.cfg.AnswersJSON || req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
		return ""
	}
	br := bufio.NewReaderSize(resp.Body, peekSize)
	resp.Body = struct {
		io.Reader
		io.Closer
	}{br, resp.Body}
	head, _ := br.Peek(peekSize)
	head = bytes.TrimLeft(head, " \t\r\n")
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case ctype == "text/html" || bytes.HasPrefix(head, []byte("<")):
		return "an HTML page"
	case resp.StatusCode < 400:
		return ""
	case len(head) == 0:
		return "an empty body"
	case head[0] != '{' && head[0] != '[':
		return fmt.Sprintf("a body that is not JSON (%s)", orUnknown(ctype))
	}
	return ""
}

// AsNotAPI is the *NotAPIError in err's chain, if any.
func AsNotAPI(err error) (*NotAPIError, bool) { return errors.AsType[*NotAPIError](err) }
