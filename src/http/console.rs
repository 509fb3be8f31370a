//! The web console: a page app (plain ES modules and CSS under `console/`) compiled into
//! the binary, so every node serves it with no install and no network at run time. It
//! reads only the JSON API and the event stream of this listener.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::{error, Ctx};

/// One served file: its name under `/console/`, its content type and its bytes.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset { name: $name, content_type: $type, body: include_str!(concat!("console/", $name)) }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the console; `index.html` is also served at `/`.
const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("cluster.js", JS),
    asset!("topics.js", JS),
    asset!("timeline.js", JS),
    asset!("groups.js", JS),
    asset!("messages.js", JS),
    asset!("faults.js", JS),
    asset!("charts.js", JS),
];

/// The console's routes, merged into the listener's router.
pub(super) fn routes() -> Router<Ctx> {
    Router::new().route("/", get(|| async { serve("index.html") })).route("/console/{file}", get(asset))
}

async fn asset(Path(file): Path<String>) -> Response {
    serve(&file)
}

fn serve(file: &str) -> Response {
    match ASSETS.iter().find(|a| a.name == file) {
        // The assets change only with the binary; revalidating keeps an upgraded node's
        // console from mixing old and new modules.
        Some(a) => ([(header::CONTENT_TYPE, a.content_type), (header::CACHE_CONTROL, "no-cache")], a.body).into_response(),
        None => error(StatusCode::NOT_FOUND, format!("no console file '{file}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_the_page_imports_is_served() {
        for a in ASSETS {
            for import in a.body.split("from \"./").skip(1) {
                let name = import.split('"').next().unwrap();
                assert!(ASSETS.iter().any(|x| x.name == name), "{} imports {name}, which is not served", a.name);
            }
        }
        let index = ASSETS[0].body;
        for a in &ASSETS[1..] {
            if a.name == "style.css" || a.name == "app.js" {
                assert!(index.contains(&format!("/console/{}", a.name)), "index.html does not load {}", a.name);
            }
        }
    }
}
