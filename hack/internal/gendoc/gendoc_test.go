package gendoc

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteFileLeavesAnUnchangedPageAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docs", "reference", "page.md")
	require.NoError(t, WriteFile(path, []byte("one\n")), "a page whose directory does not exist yet")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "one\n", string(got))
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), info.Mode().Perm())

	// The same page again: not written, so a reader at that moment sees the
	// file as it was (its modification time says it was not touched).
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	require.NoError(t, os.Chtimes(path, old, old))
	require.NoError(t, WriteFile(path, []byte("one\n")))
	info, err = os.Stat(path)
	require.NoError(t, err)
	assert.True(t, info.ModTime().Equal(old), "an unchanged page was rewritten (%s)", info.ModTime())

	// A changed page replaces the file whole: a new file under the name, no
	// temporary file left beside it.
	before, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, WriteFile(path, []byte("two\n")))
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two\n", string(got))
	after, err := os.Stat(path)
	require.NoError(t, err)
	assert.False(t, os.SameFile(before, after), "the page was rewritten in place, not replaced")
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "a temporary file was left: %v", entries)
}
