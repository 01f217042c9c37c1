package reports

import (
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Handler serves the index of a store's runs at / and the store's files
// (reports, histories, logs) below it. It only reads.
func Handler(store string) http.Handler {
	mux := http.NewServeMux()
	files := http.FileServer(http.Dir(store))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		runs, err := ListRuns(store)
		if err != nil {
			slog.Warn("serve: list runs", "store", store, "err", err)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		view := indexView{Store: store, Runs: runs, Now: time.Now().UTC().Format(time.RFC3339)}
		if err != nil {
			view.Err = err.Error()
		}
		if err := indexTmpl.Execute(w, view); err != nil {
			slog.Warn("serve: index", "err", err)
		}
	})
	mux.Handle("GET /", files)
	return mux
}

type indexView struct {
	Store string
	Runs  []Run
	Now   string
	Err   string
}

var indexTmpl = template.Must(template.New("index").Funcs(template.FuncMap{
	"ts": func(t time.Time) string { return t.Format("2006-01-02 15:04:05Z") },
	"f1": func(v float64) string {
		return strings.TrimSuffix(strings.TrimRight(strings.TrimRight(trimFloat(v), "0"), "."), ".")
	},
	"upper": strings.ToUpper,
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>lockcheck runs</title><style>` + css + `</style></head>
<body><main><h1>lockcheck runs</h1>
<p class="muted">store <code>{{.Store}}</code>, {{len .Runs}} runs, as of {{.Now}}. <a href="latest/report.html">latest report</a></p>
{{with .Err}}<p class="c-invalid">{{.}}</p>{{end}}
<table id="runs"><tr><th>test</th><th>run (UTC)</th><th>verdict</th><th>promise</th><th>duration</th><th>events</th><th>anomalies</th><th>files</th></tr>
{{range .Runs}}<tr><td title="{{.Test}}">{{.Short}}</td><td>{{if .HasHTML}}<a href="{{.Dir}}/report.html">{{ts .Time}}</a>{{else}}{{ts .Time}}{{end}}</td>
<td>{{if .Verdict}}<span class="verdict v-{{.Verdict}}" style="font-size:.85em;padding:2px 8px">{{upper (print .Verdict)}}</span>{{with .SetupFailed}} <span class="c-invalid" title="{{.}}">failed set-up</span>{{end}}{{else}}<span class="muted">not checked{{with .Err}}: {{.}}{{end}}</span>{{end}}</td>
<td>{{.Promise}}</td><td class="num">{{if .Verdict}}{{f1 .Duration}}s{{end}}</td><td class="num">{{if .Verdict}}{{.Events}}{{end}}</td><td class="num">{{if .Verdict}}{{.Anomaly}}{{end}}</td>
<td>{{$d := .Dir}}{{range .Files}}<a href="{{$d}}/{{.}}">{{.}}</a> {{end}}</td></tr>
{{else}}<tr><td colspan="8">No runs yet: <code>lockcheck run</code> makes some.</td></tr>
{{end}}</table></main></body></html>
`))
