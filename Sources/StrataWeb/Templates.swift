// The pages' templates. Every `{{value}}` is HTML-escaped (``WebEscaping``); no template uses
// the library's forms that skip escaping (three braces, or an ampersand after the two): values
// from an API are text, never markup (WebPagesTests checks). Attributes take values the same
// way, always quoted.

import Mustache

/// The pages' escaping: `<`, `>`, `&`, `"` and `'` as entities, byte by byte. swift-mustache's
/// own escaper compares `Character`s, and a quote followed by a combining mark is one Character
/// that is not a quote: it went out raw, and could close an attribute. Bytes have no such
/// grouping (no byte of a multi-byte UTF-8 sequence is ASCII), and text with nothing to escape,
/// most values, is returned as it is, without a copy.
package struct WebEscaping: MustacheContentType {
    /// The name the templates' first line selects it by.
    static let name = "StrataHTML"
    /// Registered once, before any template is parsed (the parser looks the name up).
    static let registered: Void = MustacheContentTypes.register(WebEscaping(), named: name)

    package init() {}

    package func escapeText(_ text: String) -> String {
        var text = text
        return text.withUTF8 { bytes in
            guard bytes.contains(where: { $0 == 0x3C || $0 == 0x3E || $0 == 0x26 || $0 == 0x22 || $0 == 0x27 }) else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count + 32)
            for b in bytes {
                switch b {
                case 0x3C: out.append(contentsOf: "&lt;".utf8)
                case 0x3E: out.append(contentsOf: "&gt;".utf8)
                case 0x26: out.append(contentsOf: "&amp;".utf8)
                case 0x22: out.append(contentsOf: "&quot;".utf8)
                case 0x27: out.append(contentsOf: "&#39;".utf8)
                default: out.append(b)
                }
            }
            return String(decoding: out, as: UTF8.self)
        } ?? text
    }
}

/// A value a template prints, as the library recognises it at its second check: a plain
/// `String` or number goes through five casts, then `String(describing:)`, and an item page
/// prints thousands. Escaped as any value is (`{{…}}` escapes what `renderText` gives).
struct Shown: MustacheCustomRenderable {
    let renderText: String
    var isNull: Bool { false }
    init(_ text: String) { renderText = text }
    init(_ number: some BinaryInteger) { renderText = String(number) }
}

enum Templates {
    static let all: [String: String] = [
        "layout": layout, "changeList": changeList, "sources": sources, "source": source, "item": item, "changes": changes, "log": log, "schema": schema,
        "alerts": alerts, "exchanges": exchanges, "error": error
    ]

    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · Strata</title>
        <link rel="stylesheet" href="/_strata/ui/assets/strata.css">
        <script src="/_strata/ui/assets/strata.js" defer></script>
        </head>
        <body{{#live}} data-live="{{.}}"{{/live}}>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
        <nav aria-label="Main">
        <a href="/_strata/ui/" class="brand">Strata</a>
        <a href="/_strata/ui/">Sources</a>
        <a href="/_strata/ui/alerts">Alerts</a>
        <a href="/_strata/ui/log">Log</a>
        </nav>
        <button type="button" id="theme" aria-pressed="false">Dark</button>
        </header>
        {{#asOf}}<div class="banner" role="status">You are seeing the store as of <strong>{{.}}</strong>. <a href="{{nowLink}}">Back to now</a></div>{{/asOf}}
        <div id="live-notice" class="banner" role="status" hidden>New events arrived. <a href="">Reload</a></div>
        <main id="main">
        {{$content}}{{/content}}
        </main>
        <footer><a href="{{json}}" rel="alternate" type="application/json">This page as JSON</a></footer>
        </body>
        </html>
        """

    static let sources = """
        {{<layout}}{{$content}}
        <h1>Sources</h1>
        {{^rows}}<p>No source yet: add one with <code>strata source add</code>.</p>{{/rows}}
        {{#hasRows}}
        <div class="scroll" tabindex="0" role="region" aria-label="Sources">
        <table class="rows">
        <thead><tr><th scope="col">Source</th><th scope="col">Kind</th><th scope="col">Items</th><th scope="col">Last fetch</th><th scope="col">Outcome</th><th scope="col">Indexed</th></tr></thead>
        <tbody>
        {{#rows}}<tr><th scope="row"><a href="{{link}}">{{name}}</a></th><td>{{kind}}</td><td class="num">{{items}}</td><td>{{lastFetch}}</td><td class="{{outcomeClass}}">{{outcome}}</td><td>{{indexed}}</td></tr>
        {{/rows}}
        </tbody>
        </table>
        </div>
        {{/hasRows}}
        {{/content}}{{/layout}}
        """

    static let source = """
        {{<layout}}{{$content}}
        <h1>{{name}}</h1>
        <p class="meta">{{total}} items{{#usedIndex}} (through an index){{/usedIndex}} · <a href="{{changesLink}}">Changes</a> · <a href="{{schemaLink}}">Schema</a></p>
        <form method="get" action="" class="filters" role="search" aria-label="Filter the items">
        <label>Search <input type="search" name="search" value="{{search}}" id="filter"></label>
        <label>Where <input type="text" name="where" value="{{where}}" placeholder="price &lt; 10000 and make = &quot;Kia&quot;" spellcheck="false"></label>
        {{#sort}}<input type="hidden" name="sort" value="{{.}}">{{/sort}}
        {{#asOfValue}}<input type="hidden" name="as_of" value="{{.}}">{{/asOfValue}}
        <button type="submit">Filter</button>
        </form>
        {{#error}}<p class="error" role="alert">{{.}}</p>{{/error}}
        {{#slider}}
        <form method="get" action="" class="slider" aria-label="Time">
        <label for="slider">Point in time <output id="slider-label" for="slider">{{label}}</output></label>
        <input type="range" id="slider" name="as_of" min="0" max="{{max}}" value="{{value}}" data-points="{{points}}" data-times="{{times}}">
        <label>Date <input type="datetime-local" name="date" value="{{date}}" step="1"></label>
        {{#search}}<input type="hidden" name="search" value="{{.}}">{{/search}}
        <button type="submit">Go</button>
        </form>
        {{/slider}}
        {{#hasFacetLinks}}<p class="meta">Count by: {{#facetLinks}}<a href="{{link}}">{{path}}</a> {{/facetLinks}}</p>{{/hasFacetLinks}}
        {{#hasFacets}}
        <section aria-labelledby="facets-h" class="facets"><h2 id="facets-h">Facets</h2>
        {{#facets}}<div class="facet"><h3>{{path}}</h3><ul>{{#values}}<li><a href="{{link}}">{{value}}</a> <span class="count">{{count}}</span></li>{{/values}}</ul></div>{{/facets}}
        </section>
        {{/hasFacets}}
        <div class="scroll" tabindex="0" role="region" aria-label="Items">
        <table class="rows">
        <thead><tr>{{#columns}}<th scope="col">{{#link}}<a href="{{.}}">{{label}}{{mark}}</a>{{/link}}{{^link}}{{label}}{{/link}}</th>{{/columns}}</tr></thead>
        <tbody>
        {{#rows}}<tr{{#pending}} class="pending"{{/pending}}><td>{{#thumb}}<img src="{{.}}" alt="" width="48" height="48" loading="lazy">{{/thumb}}</td><th scope="row"><a href="{{link}}">{{id}}</a></th><td>{{title}}{{#pending}} <span class="label">pending</span>{{/pending}}</td><td>{{subtitle}}</td>{{#fields}}<td>{{.}}</td>{{/fields}}</tr>
        {{/rows}}
        </tbody>
        </table>
        </div>
        {{^rows}}<p>No item matches.</p>{{/rows}}
        <nav aria-label="Pages" class="pager">{{#first}}<a href="{{.}}">First page</a>{{/first}} {{#next}}<a href="{{.}}" rel="next">Next page</a>{{/next}}</nav>
        {{/content}}{{/layout}}
        """

    static let item = """
        {{<layout}}{{$content}}
        <p class="crumbs"><a href="{{sourceLink}}">{{source}}</a></p>
        <h1>{{title}}</h1>
        <p class="meta">id {{id}} · version {{version}}{{#removed}} · <span class="label">removed</span>{{/removed}}</p>
        {{#image}}<p><img class="picture" src="{{.}}" alt="The item's stored image"></p>{{/image}}
        {{#link}}<p><a href="{{.}}" rel="noopener noreferrer nofollow">{{.}}</a></p>{{/link}}
        <section aria-labelledby="fields-h"><h2 id="fields-h">Fields</h2>
        <dl class="fields">{{#fields}}<dt>{{path}}</dt><dd>{{#url}}<a href="{{.}}" rel="noopener noreferrer nofollow">{{value}}</a>{{/url}}{{^url}}{{value}}{{/url}}</dd>{{/fields}}</dl>
        </section>
        {{#chart}}
        <section aria-labelledby="chart-h"><h2 id="chart-h">{{path}} over time</h2>
        <svg class="chart" viewBox="0 0 {{width}} {{height}}" role="img" aria-label="{{path}} from {{min}} to {{max}} across {{count}} versions"><polyline points="{{points}}" /></svg>
        <p class="meta">min {{min}} · max {{max}} · {{count}} points</p>
        </section>
        {{/chart}}
        {{#hasNumeric}}<p class="meta">Chart: {{#numeric}}<a href="{{link}}">{{path}}</a> {{/numeric}}</p>{{/hasNumeric}}
        <section aria-labelledby="versions-h"><h2 id="versions-h">Versions</h2>
        <form method="get" action="" class="compare" aria-label="Compare two versions">
        <label>From <select name="from">{{#versions}}<option value="{{seq}}"{{#isFrom}} selected{{/isFrom}}>{{label}}</option>{{/versions}}</select></label>
        <label>To <select name="to">{{#versions}}<option value="{{seq}}"{{#isTo}} selected{{/isTo}}>{{label}}</option>{{/versions}}</select></label>
        <button type="submit">Compare</button>
        </form>
        {{#compare}}
        <section aria-labelledby="compare-h" class="diff"><h3 id="compare-h">From seq {{from}} to seq {{to}}</h3>
        {{> changeList}}
        </section>
        {{/compare}}
        <ol class="timeline" reversed>
        {{#timeline}}<li id="v{{seq}}"{{#current}} aria-current="true"{{/current}}>
        <h3><a href="#v{{seq}}">v{{version}}</a> <span class="kind {{kind}}">{{kind}}</span> seq {{seq}} · <time datetime="{{iso}}">{{observed}}</time>{{#origin}} · {{.}}{{/origin}}{{#labels}} <span class="label">{{.}}</span>{{/labels}}</h3>
        <p class="nav">{{#previous}}<a href="#v{{.}}" rel="prev">Previous change</a>{{/previous}} {{#next}}<a href="#v{{.}}" rel="next">Next change</a>{{/next}} <a href="{{asOfLink}}">See the source then</a></p>
        {{> changeList}}
        </li>
        {{/timeline}}
        </ol>
        {{#olderVersions}}<nav aria-label="Versions" class="pager"><a href="{{.}}">Older versions</a></nav>{{/olderVersions}}
        </section>
        {{/content}}{{/layout}}
        """

    static let changeList = """
        {{#hasChanges}}<table class="changes"><thead><tr><th scope="col">Field</th><th scope="col">Before</th><th scope="col">After</th></tr></thead><tbody>
        {{#changes}}<tr><th scope="row">{{path}}</th><td>{{#old}}<del>{{#whole}}<mark>{{.}}</mark>{{/whole}}{{#parts}}{{plain}}{{#marked}}<mark>{{.}}</mark>{{/marked}}{{/parts}}</del>{{/old}}</td><td>{{#new}}<ins>{{#whole}}<mark>{{.}}</mark>{{/whole}}{{#parts}}{{plain}}{{#marked}}<mark>{{.}}</mark>{{/marked}}{{/parts}}</ins>{{/new}}</td></tr>
        {{/changes}}</tbody></table>{{/hasChanges}}
        """

    static let changes = """
        {{<layout}}{{$content}}
        <p class="crumbs"><a href="{{sourceLink}}">{{source}}</a></p>
        <h1>Changes in {{source}}</h1>
        <form method="get" action="" class="filters" role="search" aria-label="Which changes">
        <label>From <input type="text" name="from" value="{{from}}" placeholder="seq or date" id="filter"></label>
        <label>To <input type="text" name="to" value="{{to}}" placeholder="now"></label>
        <label>When <input type="text" name="when" value="{{when}}" placeholder="price &lt; old.price" spellcheck="false"></label>
        <fieldset><legend>Kinds</legend>{{#kinds}}<label><input type="checkbox" name="kind" value="{{name}}"{{#on}} checked{{/on}}> {{name}}</label> {{/kinds}}</fieldset>
        <button type="submit">Show</button>
        <a id="since" href="{{sinceLink}}" data-source="{{source}}" data-head="{{head}}">Since I last looked</a>
        </form>
        {{#error}}<p class="error" role="alert">{{.}}</p>{{/error}}
        <p class="meta">{{count}} changes{{#more}} (the first {{count}}){{/more}}</p>
        <div class="scroll" tabindex="0" role="region" aria-label="Changes">
        <table class="rows">
        <thead><tr><th scope="col">Seq</th><th scope="col">Observed</th><th scope="col">Kind</th><th scope="col">Item</th><th scope="col">Fields</th></tr></thead>
        <tbody>
        {{#rows}}<tr><td class="num">{{seq}}</td><td><time datetime="{{iso}}">{{observed}}</time></td><td><span class="kind {{kind}}">{{kind}}</span></td><th scope="row"><a href="{{link}}">{{title}}</a></th><td>{{fields}}</td></tr>
        {{/rows}}
        </tbody>
        </table>
        </div>
        {{/content}}{{/layout}}
        """

    static let log = """
        {{<layout}}{{$content}}
        <h1>Event log</h1>
        <form method="get" action="" class="filters" role="search" aria-label="Filter the log">
        <label>Type <input type="text" name="type" value="{{type}}" id="filter"></label>
        <label>Stream <input type="text" name="stream" value="{{stream}}"></label>
        <button type="submit">Filter</button>
        </form>
        {{#event}}
        <section aria-labelledby="event-h" class="envelope"><h2 id="event-h">Event {{seq}}</h2>
        <dl class="fields">{{#fields}}<dt>{{path}}</dt><dd>{{value}}</dd>{{/fields}}</dl>
        </section>
        {{/event}}
        <div class="scroll" tabindex="0" role="region" aria-label="Events">
        <table class="rows">
        <thead><tr><th scope="col">Seq</th><th scope="col">Recorded</th><th scope="col">Type</th><th scope="col">Stream</th><th scope="col">Size</th><th scope="col">Hash</th><th scope="col">Previous</th></tr></thead>
        <tbody>
        {{#rows}}<tr><th scope="row"><a href="{{link}}">{{seq}}</a></th><td><time datetime="{{iso}}">{{recorded}}</time></td><td>{{type}}</td><td>{{stream}}</td><td class="num">{{size}}</td><td><code>{{hash}}</code></td><td><code>{{previous}}</code></td></tr>
        {{/rows}}
        </tbody>
        </table>
        </div>
        <nav aria-label="Pages" class="pager">{{#older}}<a href="{{.}}" rel="next">Older events</a>{{/older}}</nav>
        {{/content}}{{/layout}}
        """

    static let schema = """
        {{<layout}}{{$content}}
        <p class="crumbs"><a href="{{sourceLink}}">{{source}}</a></p>
        <h1>Schema of {{source}}</h1>
        <p class="meta">{{items}} items, {{details}} details, as of seq {{seq}}</p>
        <div class="scroll" tabindex="0" role="region" aria-label="Fields">
        <table class="rows">
        <thead><tr><th scope="col">Field</th><th scope="col">Types</th><th scope="col">Items</th><th scope="col">First seen</th><th scope="col">Last changed</th><th scope="col">Example</th></tr></thead>
        <tbody>
        {{#fields}}<tr><th scope="row">{{path}}</th><td>{{types}}</td><td class="num">{{items}}</td><td class="num">{{first}}</td><td class="num">{{changed}}</td><td>{{example}}</td></tr>
        {{/fields}}
        </tbody>
        </table>
        </div>
        <section aria-labelledby="drift-h"><h2 id="drift-h">Drift</h2>
        {{^drift}}<p>No field appeared, went or changed type.</p>{{/drift}}
        {{#hasDrift}}
        <div class="scroll" tabindex="0" role="region" aria-label="Drift">
        <table class="rows">
        <thead><tr><th scope="col">Seq</th><th scope="col">Observed</th><th scope="col">Kind</th><th scope="col">Field</th><th scope="col">Before</th><th scope="col">After</th><th scope="col">Items</th></tr></thead>
        <tbody>
        {{#drift}}<tr><td class="num"><a href="{{link}}">{{seq}}</a></td><td><time datetime="{{iso}}">{{observed}}</time></td><td>{{kind}}</td><th scope="row">{{path}}</th><td>{{before}}</td><td>{{after}}</td><td class="num">{{items}}</td></tr>
        {{/drift}}
        </tbody>
        </table>
        </div>
        {{/hasDrift}}
        </section>
        {{/content}}{{/layout}}
        """

    static let alerts = """
        {{<layout}}{{$content}}
        <h1>Alerts</h1>
        {{^rows}}<p>No alert yet: add one with <code>strata alert add</code>.</p>{{/rows}}
        {{#hasRows}}
        <div class="scroll" tabindex="0" role="region" aria-label="Alerts">
        <table class="rows">
        <thead><tr><th scope="col">Alert</th><th scope="col">Source</th><th scope="col">On</th><th scope="col">To</th><th scope="col">Queued</th><th scope="col">Delivered</th><th scope="col">Pending</th><th scope="col">Failed</th></tr></thead>
        <tbody>
        {{#rows}}<tr><th scope="row"><a href="{{link}}">{{name}}</a></th><td><a href="{{sourceLink}}">{{source}}</a></td><td>{{on}}</td><td>{{target}}</td><td class="num">{{queued}}</td><td class="num">{{delivered}}</td><td class="num">{{pending}}</td><td class="num{{#failed}} error{{/failed}}">{{failed}}</td></tr>
        {{/rows}}
        </tbody>
        </table>
        </div>
        {{/hasRows}}
        {{#selected}}
        <section aria-labelledby="notes-h"><h2 id="notes-h">Notifications of {{name}}</h2>
        {{^notes}}<p>None yet.</p>{{/notes}}
        <ol class="timeline" reversed>{{#notes}}<li><h3><span class="kind {{kind}}">{{kind}}</span> <a href="{{link}}">{{title}}</a> seq {{seq}} · <time datetime="{{iso}}">{{observed}}</time></h3><p class="meta">{{id}}</p></li>{{/notes}}</ol>
        </section>
        {{/selected}}
        {{/content}}{{/layout}}
        """

    static let exchanges = """
        {{<layout}}{{$content}}
        <p class="crumbs"><a href="{{sourceLink}}">{{source}}</a></p>
        <h1>Exchanges recorded in {{source}}</h1>
        <p class="meta">Download: <a href="{{har}}" download>HAR</a> · <a href="{{warc}}" download>WARC</a></p>
        {{#exchange}}
        <section aria-labelledby="exchange-h" class="envelope"><h2 id="exchange-h">{{method}} {{url}}</h2>
        <p class="meta">seq {{seq}} · <time datetime="{{iso}}">{{observed}}</time> · status {{status}}{{#previous}} · <a href="{{.}}">Compare with the previous answer to this request</a>{{/previous}}</p>
        {{#compare}}<section aria-labelledby="cmp-h" class="diff"><h3 id="cmp-h">Against seq {{against}}</h3>{{^hasChanges}}<p>The same body.</p>{{/hasChanges}}{{> changeList}}</section>{{/compare}}
        <div class="pair">
        <section aria-labelledby="req-h"><h3 id="req-h">Request</h3>
        <dl class="fields">{{#requestHeaders}}<dt>{{path}}</dt><dd>{{value}}</dd>{{/requestHeaders}}</dl>
        {{#requestBody}}<p class="meta">Body: SHA-256 {{.}}</p>{{/requestBody}}
        </section>
        <section aria-labelledby="res-h"><h3 id="res-h">Response</h3>
        <dl class="fields">{{#responseHeaders}}<dt>{{path}}</dt><dd>{{value}}</dd>{{/responseHeaders}}</dl>
        {{#body}}<pre class="body" tabindex="0">{{.}}</pre>{{/body}}{{#bodyNote}}<p class="meta">{{.}}</p>{{/bodyNote}}
        </section>
        </div>
        </section>
        {{/exchange}}
        <div class="scroll" tabindex="0" role="region" aria-label="Exchanges">
        <table class="rows">
        <thead><tr><th scope="col">Seq</th><th scope="col">Recorded</th><th scope="col">Method</th><th scope="col">URL</th><th scope="col">Status</th></tr></thead>
        <tbody>
        {{#rows}}<tr><th scope="row"><a href="{{link}}">{{seq}}</a></th><td><time datetime="{{iso}}">{{observed}}</time></td><td>{{method}}</td><td>{{url}}</td><td class="num">{{status}}</td></tr>
        {{/rows}}
        </tbody>
        </table>
        </div>
        {{^rows}}<p>Nothing recorded.</p>{{/rows}}
        <nav aria-label="Pages" class="pager">{{#older}}<a href="{{.}}" rel="next">Older exchanges</a>{{/older}}</nav>
        {{/content}}{{/layout}}
        """

    static let error = """
        {{<layout}}{{$content}}
        <h1>{{heading}}</h1>
        <p class="error" role="alert">{{message}}</p>
        <p><a href="/_strata/ui/">All sources</a></p>
        {{/content}}{{/layout}}
        """
}
