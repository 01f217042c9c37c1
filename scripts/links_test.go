package scripts

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	linkRE   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeRE   = regexp.MustCompile("`[^`]*`")
	headerRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// markdownLines is a page's lines outside fenced code blocks.
func markdownLines(text string) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, l)
		}
	}
	return out
}

// slug is GitHub's anchor for a heading: lower case, punctuation dropped,
// spaces to hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors a page's headings make (a repeated heading gets
// -1, -2 ...).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range markdownLines(text) {
		m := headerRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+string(rune('0'+n))] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestRelativeLinks checks every relative link of the README, DEVELOPERS.md,
// CHANGELOG.md and docs/: the file must exist, and an anchor must be a heading of it.
func TestRelativeLinks(t *testing.T) {
	root := ".."
	pages := []string{"README.md", "DEVELOPERS.md", "CHANGELOG.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		pages = append(pages, filepath.ToSlash(rel))
	}
	if len(docs) < 10 {
		t.Fatalf("only %d pages in docs/: is this the repository root's scripts/?", len(docs))
	}
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLines(string(b)) {
			for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), file)))
				}
				content, err := os.ReadFile(filepath.Join(root, path))
				if err != nil {
					t.Errorf("%s: broken link %s: %s does not exist", page, target, path)
					continue
				}
				if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(string(content))[anchor] {
					t.Errorf("%s: broken link %s: no heading in %s makes the anchor #%s", page, target, path, anchor)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links found: is the link pattern broken?", checked)
	}
}

// The checker itself must catch what it is for.
func TestSlugAndAnchors(t *testing.T) {
	for h, want := range map[string]string{
		"Your own image (`--image`)":                   "your-own-image---image",
		"Power loss: the lazy filesystem (`--lazyfs`)": "power-loss-the-lazy-filesystem---lazyfs",
		"What a lock must do (`workload.Lock`)":        "what-a-lock-must-do-workloadlock",
		"Seeds 000-004":                                "seeds-000-004",
	} {
		if got := slug(strings.ReplaceAll(h, "`", "")); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	a := anchors("# A\n```\n# not a heading\n```\n## B c\n## B c\n")
	if !a["a"] || !a["b-c"] || !a["b-c-1"] || a["not-a-heading"] {
		t.Errorf("anchors %v", a)
	}
}
