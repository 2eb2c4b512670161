//! `ApiError`: every failure the HTTP API answers, as `{"error":{"code","message"}}`
//! with its status (docs/api.md); and the body/query extractors that produce it.

use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use holdline_contract::{CurrentQuestion, ErrorBody, ErrorCode, ErrorDetail};

use holdline_core::hub::HubError;
use holdline_store::session::Token;

/// What a JSON route's handler returns: its answer's body, or the error it answers.
pub type JsonResult<T> = Result<axum::Json<T>, ApiError>;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: ErrorCode,
    pub message: String,
    /// `STALE_QUESTION`'s: the question the agent asks now, for the panel to show.
    pub current_question: Option<CurrentQuestion>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            current_question: None,
        }
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::BadRequest, message)
    }
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized, message)
    }
    /// An agent key the hub does not know, or one that was revoked.
    pub fn key_refused() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            ErrorCode::KeyRefused,
            "the hub refused this agent key: it is wrong or was revoked (`holdline-hub key list` shows the live keys)",
        )
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, message)
    }
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::MethodNotAllowed,
            message,
        )
    }
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::TooLarge, message)
    }
    pub fn rate_limited(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::RateLimited,
            message,
        )
    }
}

impl From<HubError> for ApiError {
    fn from(e: HubError) -> Self {
        let message = e.to_string();
        match e {
            HubError::BadRequest(_) => ApiError::bad_request(message),
            HubError::NotFound(_) => {
                ApiError::new(StatusCode::NOT_FOUND, ErrorCode::SessionNotFound, message)
            }
            HubError::BindingRejected(_) => {
                ApiError::new(StatusCode::FORBIDDEN, ErrorCode::BindingRejected, message)
            }
            HubError::Forbidden(_) => ApiError::forbidden(message),
            HubError::Closed(_) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::SessionClosed, message)
            }
            HubError::PermissionOver => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::PermissionOver, message)
            }
            HubError::BindingTaken(_) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::BindingTaken, message)
            }
            HubError::StaleQuestion(q) => ApiError {
                current_question: Some(CurrentQuestion {
                    seq: q.seq,
                    preview: q.preview,
                }),
                ..ApiError::new(StatusCode::CONFLICT, ErrorCode::StaleQuestion, message)
            },
            // A disk that refuses writes (full, an I/O error) or a store being
            // reopened: the hub heals by itself, so the caller may try again.
            HubError::Store(holdline_store::store::StoreError::Io(e)) => {
                tracing::error!(error = %e, "store failure");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::StoreFailing,
                    "the hub could not write to its store (check free disk space); the change may not have been recorded, try again later",
                )
            }
            HubError::Quota(_) => ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                ErrorCode::AttachmentQuota,
                message,
            ),
            HubError::Released(_) => {
                ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, message)
            }
            HubError::Store(e) => {
                tracing::error!(error = %e, "store failure");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    ErrorCode::Internal,
                    "the hub could not read or write its store; the change may not have been recorded",
                )
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message,
                current_question: self.current_question,
            },
        };
        (self.status, axum::Json(body)).into_response()
    }
}

/// Parses a token from a request; a malformed one is a 400 that shows what was sent.
pub fn token(s: &str) -> Result<Token, ApiError> {
    Token::parse(s).ok_or_else(|| {
        let shown: String = s.chars().take(48).collect();
        ApiError::bad_request(format!(
            "malformed token {shown:?}: expected ct_ followed by 32 lowercase hex digits"
        ))
    })
}

/// A JSON body whose every failure (too large, not UTF-8, not JSON, wrong
/// fields) is an [`ApiError`]. The body cap comes from `DefaultBodyLimit`.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes =
            axum::body::Bytes::from_request(req, state)
                .await
                .map_err(|e: BytesRejection| {
                    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                        ApiError::too_large("the request body is over this route's size limit")
                    } else {
                        ApiError::bad_request(format!("cannot read the request body: {e}"))
                    }
                })?;
        if bytes.is_empty() {
            return Err(ApiError::bad_request("the request needs a JSON body"));
        }
        serde_json::from_slice(&bytes)
            .map(Body)
            .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
    }
}

/// Query parameters with [`ApiError`] rejections.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Query(q.0))
            .map_err(|e: QueryRejection| ApiError::bad_request(e.body_text()))
    }
}
