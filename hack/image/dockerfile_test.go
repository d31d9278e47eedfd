package main

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Dockerfile cannot be built here (no Docker engine), so its equivalence to
// `make image` is checked by reading it: the same build script, user, entrypoint,
// binary paths and labels.
func TestTheDockerfileBuildsWhatMakeImageBuilds(t *testing.T) {
	f, err := os.Open("../../Dockerfile")
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	var cont string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cont += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, cont+l)
		cont = ""
	}
	require.NoError(t, sc.Err())

	var final []string // the last stage
	for _, l := range lines {
		if strings.HasPrefix(l, "FROM ") {
			final = nil
		}
		final = append(final, l)
	}
	require.NotEmpty(t, final)
	assert.Regexp(t, `^FROM gcr.io/distroless/static[-a-z0-9]*:nonroot$`, final[0], "a distroless static, nonroot final stage")
	assert.Contains(t, final, "USER "+User)
	assert.Contains(t, final, `ENTRYPOINT ["`+Entrypoint+`"]`)
	assert.Contains(t, final, "COPY --from=build /out/overcast-ccm /out/overcast "+BinDir+"/")
	assert.Contains(t, final, "ENV SSL_CERT_FILE="+CACertFile)

	all := strings.Join(lines, "\n")
	assert.Regexp(t, regexp.MustCompile(`(?m)^RUN TAGS=nodev .*hack/build.sh /out "\$TARGETOS/\$TARGETARCH"$`), all, "binaries built by hack/build.sh, as make image does")
	labels := strings.Join(final, "\n")
	for k := range testMeta.Labels() {
		assert.Contains(t, labels, k+"=", "label %s", k)
	}
}
