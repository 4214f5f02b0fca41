"""The model layer: requests and answers, roles, thinking and prices, and the backends
behind one public protocol (``Backend``), made by name through the ``stay.backends`` entry
points (offline, anthropic, a plug-in's), with the request cache in front of any of them.
``docs/models.md`` is the reference, ``docs/plugins.md`` how to write a backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stay._lazy import lazy_package

if TYPE_CHECKING:
    from stay.models._anthropic import AnthropicBackend as AnthropicBackend
    from stay.models._anthropic import PrefixGate as PrefixGate
    from stay.models._anthropic import prefix_keys as prefix_keys
    from stay.models._anthropic import request_params as request_params
    from stay.models._batch import prefetch as prefetch
    from stay.models._cache import REPLAY as REPLAY
    from stay.models._cache import CachedBackend as CachedBackend
    from stay.models._cache import RequestCache as RequestCache
    from stay.models._cache import request_key as request_key
    from stay.models._offline import OfflineBackend as OfflineBackend
    from stay.models._protocol import BATCH_DISCOUNT as BATCH_DISCOUNT
    from stay.models._protocol import DEFAULT_MODELS as DEFAULT_MODELS
    from stay.models._protocol import FEATURES as FEATURES
    from stay.models._protocol import MIN_CACHEABLE_TOKENS as MIN_CACHEABLE_TOKENS
    from stay.models._protocol import OUTPUT_LIMIT as OUTPUT_LIMIT
    from stay.models._protocol import PRICES as PRICES
    from stay.models._protocol import SCREEN_STAGE as SCREEN_STAGE
    from stay.models._protocol import SCREENING as SCREENING
    from stay.models._protocol import THINKING as THINKING
    from stay.models._protocol import Backend as Backend
    from stay.models._protocol import ModelClient as ModelClient
    from stay.models._protocol import Price as Price
    from stay.models._protocol import Rates as Rates
    from stay.models._protocol import Rejecting as Rejecting
    from stay.models._protocol import Screening as Screening
    from stay.models._protocol import Thinking as Thinking
    from stay.models._protocol import answer_cost as answer_cost
    from stay.models._protocol import backend_from as backend_from
    from stay.models._protocol import backends as backends
    from stay.models._protocol import can_screen as can_screen
    from stay.models._protocol import cost as cost
    from stay.models._protocol import describe_cost as describe_cost
    from stay.models._protocol import distribution as distribution
    from stay.models._protocol import hold_more as hold_more
    from stay.models._protocol import holding as holding
    from stay.models._protocol import make_backend as make_backend
    from stay.models._protocol import min_cacheable_tokens as min_cacheable_tokens
    from stay.models._protocol import price_label as price_label
    from stay.models._protocol import prices_of as prices_of
    from stay.models._protocol import screen_request as screen_request
    from stay.models._protocol import screening_of as screening_of
    from stay.models._protocol import verdict as verdict
    from stay.requests import MAX_TOKENS as MAX_TOKENS
    from stay.requests import ROLES as ROLES
    from stay.requests import ModelAnswer as ModelAnswer
    from stay.requests import ModelRequest as ModelRequest
    from stay.requests import Role as Role
    from stay.requests import SystemBlock as SystemBlock
    from stay.requests import Usage as Usage

__getattr__, __dir__, __all__ = lazy_package(__name__, __file__)
