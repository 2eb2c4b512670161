//! [`HubClient`]: the running hub's person API as the admin commands call it, with the
//! request and answer types its handlers use (`api::dto`) and its paths (`api::paths`):
//! no JSON is read by field name here.
//!
//! Invariant: the secret goes only to the hub at `base`, which never redirects (a
//! redirect is not followed, so the secret cannot be carried elsewhere).

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use holdline_contract::ErrorBody;

use super::{AdminError, Result, fail, hub_url};
use crate::api::dto::{
    AttachmentsAnswer, BackupAnswer, FreeAnswer, FreeBody, Health, HistoryQuery, ImportAnswer,
    KeyCreateBody, KeyCreated, KeyList, KeyRevoked, ListQuery, PushTestAnswer, ReplyAnswer,
    ReplyBody, SessionDetail, SessionList,
};
use crate::api::paths;
use holdline_core::config::Config;
use holdline_core::home::Home;
use holdline_store::interchange::ExportFile;

/// The running hub, reached with the home's secret.
pub struct HubClient {
    http: reqwest::Client,
    /// `http://host:port`, for the calls and the commands' sentences.
    pub base: String,
    secret: String,
}

impl HubClient {
    /// A client for the hub of `config`'s home; fails when the home has no secret yet.
    pub fn new(config: &Config) -> Result<HubClient> {
        let home = Home::new(config.home.clone());
        let secret = home.read_secret().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                AdminError::Message(format!(
                    "no hub has run with the home {} yet (it has no secret). Start it with \
                     `holdline-hub serve`, then try again",
                    home.root.display()
                ))
            } else {
                AdminError::Message(format!(
                    "cannot read the secret in {}: {e}",
                    home.root.display()
                ))
            }
        })?;
        // The hub never redirects; a redirect would carry the secret elsewhere.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| AdminError::Message(e.to_string()))?;
        Ok(HubClient {
            http,
            base: hub_url(config),
            secret,
        })
    }

    /// The running hub's client, or `None` when no hub answers.
    pub async fn running(config: &Config) -> Option<HubClient> {
        let c = HubClient::new(config).ok()?;
        c.is_up().await.then_some(c)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Whether a hub answers here: `/healthz` is 200, or 503 while its store
    /// fails (it still runs and holds the store).
    pub async fn is_up(&self) -> bool {
        self.http
            .get(self.url(paths::HEALTHZ))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .is_ok_and(|r| {
                r.status().is_success() || r.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE
            })
    }

    /// `/healthz` with the secret, whatever its status (503: the store fails).
    pub async fn health(&self) -> Result<Health> {
        let res = self
            .http
            .get(self.url(paths::HEALTHZ))
            .bearer_auth(&self.secret)
            .send()
            .await
            .map_err(|_| not_running(&self.base))?;
        res.json()
            .await
            .map_err(|e| AdminError::Message(format!("the hub at {} answered: {e}", self.base)))
    }

    /// `GET /api/sessions/{token}` with the newest `limit` messages.
    pub async fn session(&self, token: &str, limit: usize) -> Result<SessionDetail> {
        let query = HistoryQuery {
            before: None,
            limit: Some(limit),
        };
        let req = self
            .http
            .get(self.url(&paths::session(token)))
            .query(&query);
        self.call(req).await
    }

    /// `GET /api/sessions`: the first page of `status` (`all`, or "" for the open ones).
    pub async fn sessions(&self, status: &str, limit: usize) -> Result<SessionList> {
        let query = ListQuery {
            status: Some(status.to_owned()),
            limit: Some(limit),
            ..ListQuery::default()
        };
        self.call(self.http.get(self.url(paths::SESSIONS)).query(&query))
            .await
    }

    pub async fn reply(&self, body: &ReplyBody) -> Result<ReplyAnswer> {
        self.post(paths::REPLY, body).await
    }

    pub async fn backup(&self) -> Result<BackupAnswer> {
        self.call(self.http.post(self.url(paths::BACKUP))).await
    }

    pub async fn import(&self, file: &ExportFile) -> Result<ImportAnswer> {
        self.post(paths::IMPORT, file).await
    }

    /// `GET /api/export`, its body not yet read (it streams).
    pub async fn export(&self) -> Result<reqwest::Response> {
        let res = reqwest::Client::new()
            .get(self.url(paths::EXPORT))
            .bearer_auth(&self.secret)
            .send()
            .await
            .map_err(|_| not_running(&self.base))?;
        if !res.status().is_success() {
            return fail(format!("the hub answered {} to the export", res.status()));
        }
        Ok(res)
    }

    pub async fn create_key(&self, body: &KeyCreateBody) -> Result<KeyCreated> {
        self.post(paths::KEYS, body).await
    }

    pub async fn keys(&self) -> Result<KeyList> {
        self.call(self.http.get(self.url(paths::KEYS))).await
    }

    pub async fn revoke_key(&self, name: &str) -> Result<KeyRevoked> {
        self.call(self.http.delete(self.url(&paths::key(name))))
            .await
    }

    pub async fn attachments(&self) -> Result<AttachmentsAnswer> {
        self.call(self.http.get(self.url(paths::ATTACHMENTS))).await
    }

    pub async fn free_attachments(&self, body: &FreeBody) -> Result<FreeAnswer> {
        self.post(paths::ATTACHMENTS_FREE, body).await
    }

    pub async fn push_test(&self) -> Result<PushTestAnswer> {
        self.call(self.http.post(self.url(paths::PUSH_TEST))).await
    }

    async fn post<T: DeserializeOwned>(&self, path: &str, body: &impl Serialize) -> Result<T> {
        self.call(self.http.post(self.url(path)).json(body)).await
    }

    /// Sends a request with the secret; its answer, or the hub's error as a sentence.
    async fn call<T: DeserializeOwned>(&self, req: reqwest::RequestBuilder) -> Result<T> {
        let res = req.bearer_auth(&self.secret).send().await.map_err(|e| {
            if e.is_connect() {
                not_running(&self.base)
            } else {
                AdminError::Message(format!("the hub at {} did not answer: {e}", self.base))
            }
        })?;
        let status = res.status();
        if status.is_success() {
            return res
                .json()
                .await
                .map_err(|e| AdminError::Message(format!("the hub's answer: {e}")));
        }
        let error: Option<ErrorBody> = res.json().await.ok();
        let message = error.map_or_else(|| "no details".to_owned(), |b| b.error.message);
        fail(format!("the hub answered {status}: {message}"))
    }
}

/// Nothing answers at `base`: say how to start the hub.
fn not_running(base: &str) -> AdminError {
    let service = if cfg!(target_os = "macos") {
        "launchctl kickstart gui/$(id -u)/dev.holdline.hub"
    } else {
        "systemctl --user start holdline-hub"
    };
    AdminError::Message(format!(
        "no holdline-hub is running at {base}. Start it with `holdline-hub serve` \
         (or, if you installed the service, `{service}`), then try again"
    ))
}
