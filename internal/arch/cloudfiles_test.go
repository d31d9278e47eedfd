package arch

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// cloudFiles are the files docs/architecture.md's table "Each cloud's files"
// names for each cloud, by cloud (its columns). A file in a package of the
// cloud's own is written with its folder (csapi/client.go).
func cloudFiles(t *testing.T) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Each cloud's files")
	if !ok {
		t.Fatal("docs/architecture.md has no section \"Each cloud's files\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var clouds []string
	files := map[string][]string{}
	name := regexp.MustCompile("`([a-z0-9_]+(?:/[a-z0-9_]+)?)(\\.go)?`")
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		switch {
		case len(cells) < 3 || strings.HasPrefix(line, "|---"):
		case cells[0] == "concern":
			clouds = cells[1:]
		default:
			for i, cell := range cells[1:] {
				if i >= len(clouds) {
					break
				}
				for _, m := range name.FindAllStringSubmatch(cell, -1) {
					f := m[1]
					if m[2] == "" {
						continue // not a file: an identifier
					}
					f += ".go"
					files[clouds[i]] = append(files[clouds[i]], f)
				}
			}
		}
	}
	return files
}

// Every file of a cloud's provider is named in docs/architecture.md's table
// of each cloud's files, and every file it names is there: a newcomer finds
// where a concern lives from the table.
func TestEveryFileOfACloudIsInTheArchitectureTable(t *testing.T) {
	named := cloudFiles(t)
	if len(named) < 4 {
		t.Fatalf("the table names the files of %d clouds", len(named))
	}
	for cloud, files := range named {
		dir := filepath.Join("../../internal/provider", cloud)
		have, err := goFiles(dir)
		if err != nil {
			t.Errorf("the table has a column %s: %v", cloud, err)
			continue
		}
		for _, f := range have {
			if !slices.Contains(files, f) {
				t.Errorf("internal/provider/%s/%s is not in docs/architecture.md's table of each cloud's files", cloud, f)
			}
		}
		for _, f := range files {
			if !slices.Contains(have, f) {
				t.Errorf("docs/architecture.md's table names %s for %s, which has no such file", f, cloud)
			}
		}
	}
}

// goFiles are the non-test Go files of a cloud's provider, and of the
// packages in its folders as folder/file.go.
func goFiles(dir string) ([]string, error) {
	var have []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if n := d.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			rel, err := filepath.Rel(dir, path)
			have = append(have, filepath.ToSlash(rel))
			return err
		}
		return nil
	})
	return have, err
}
