"""Kokoro-82M's forward pass over a batch of phoneme strings of different lengths.

The batched equivalent of ``kokoro.KModel.forward_with_tokens``: token ids padded with masks
through PL-BERT, the duration encoder and the text encoder; per-item style vectors and speeds;
per-item durations and alignment; the decoder over padded frames (``kokoro_masked``); each
item's audio cropped to its own length (frames x 600 samples). Built around a loaded ``KModel``
whose weights it uses as they are, with two load-time speed-ups, each optional:

- ``remove_weight_norm``: fold weight norm into plain weights once (kokoro recomputes it in
  every forward: 89 times per call);
- ``fuse_styles``: every style -> (gamma, beta) projection of the decoder (and of the
  predictor) as one matrix product per forward instead of one small one per norm layer.

LSTM weights are flattened once at load; the forward never re-flattens them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import nn

from tts_server.engines.torch.kokoro_masked import Ragged, StyleOf, decode, f0_and_noise, run_lstm

STYLE_SPLIT = 128  # ref_s[:, :128] styles the decoder, ref_s[:, 128:] the prosody predictor


@dataclass(frozen=True)
class Acoustics:
    """What the text side hands the decoder, padded to the longest item's ``frames``."""

    asr: torch.Tensor  # (B, 512, frames): the text encoder's features, aligned
    f0: torch.Tensor  # (B, 2 * frames): the F0 curve
    energy: torch.Tensor  # (B, 2 * frames)
    styles: torch.Tensor  # (B, 256) style rows
    frames: Ragged  # each item's frame count
    durations: list[list[int]]  # each item's frames per token


@dataclass(frozen=True)
class BatchOutput:
    """Each item's waveform (1-D, on the model's device) and its per-token frame counts."""

    audio: list[torch.Tensor]
    durations: list[list[int]]


def _style_layers(module: nn.Module) -> list[nn.Linear]:
    """The ``fc`` of every style-conditioned norm under ``module`` (AdaIN1d, AdaLayerNorm)."""
    return [
        sub.fc for sub in module.modules() if hasattr(sub, "fc") and isinstance(sub.fc, nn.Linear)
    ]


class StyleProjections:
    """All style projections of one half of the model, fused into one matrix when asked."""

    def __init__(self, layers: Sequence[nn.Linear], fused: bool) -> None:
        self._layers = list(layers)
        self._slices: dict[nn.Linear, slice] = {}
        start = 0
        for layer in self._layers:
            self._slices[layer] = slice(start, start + layer.out_features)
            start += layer.out_features
        self._weight: torch.Tensor | None = None
        self._bias: torch.Tensor | None = None
        if fused and self._layers:
            self._weight = torch.cat([layer.weight for layer in self._layers]).detach()
            self._bias = torch.cat([layer.bias for layer in self._layers]).detach()

    def __call__(self, style: torch.Tensor) -> StyleOf:
        """The projections of ``style`` (B, 128), looked up by layer."""
        if self._weight is None:
            return lambda layer: layer(style)
        projected = torch.addmm(self._bias, style, self._weight.T)
        return lambda layer: projected[:, self._slices[layer]]


class BatchedKokoro:
    """A loaded ``KModel`` run on batches of token-id lists (see the module docstring)."""

    def __init__(
        self, model: nn.Module, *, remove_weight_norm: bool = True, fuse_styles: bool = True
    ) -> None:
        self.model = model
        if remove_weight_norm:
            _remove_weight_norm(model)
        for module in model.modules():
            if isinstance(module, nn.LSTM):
                module.flatten_parameters()
        self._decoder_styles = StyleProjections(_style_layers(model.decoder), fuse_styles)
        self._predictor_styles = StyleProjections(_style_layers(model.predictor), fuse_styles)

    @property
    def device(self) -> torch.device:
        """Where the model's weights are."""
        return next(self.model.parameters()).device

    @torch.inference_mode()
    def __call__(
        self,
        token_ids: Sequence[Sequence[int]],
        styles: torch.Tensor,
        speeds: Sequence[float],
        rngs: Sequence[torch.Generator | None] | None = None,
        frames: Sequence[Sequence[int]] | None = None,
    ) -> BatchOutput:
        """Synthesize each token-id list (boundary pads included) with its style row and speed.

        ``styles`` is ``(B, 256)``; ``rngs`` (one per item, default torch's own) draws the
        harmonic source's noise, so a seeded generator reproduces an item's draws exactly.
        ``frames`` (one count per token) replaces the predicted durations (see ``acoustics``).
        """
        acoustics = self.acoustics(token_ids, styles, speeds, frames)
        return BatchOutput(audio=self.decode(acoustics, rngs), durations=acoustics.durations)

    @torch.inference_mode()
    def acoustics(
        self,
        token_ids: Sequence[Sequence[int]],
        styles: torch.Tensor,
        speeds: Sequence[float],
        frames: Sequence[Sequence[int]] | None = None,
    ) -> Acoustics:
        """The text side: durations, then the aligned text features, F0 and energy.

        ``frames`` (one count per token) replaces the predicted durations: to compare the
        acoustic side with another implementation's on the same alignment.
        """
        text = self._text_side(token_ids, styles.to(self.device), speeds)
        if frames is not None:
            text = replace(text, frames_per_token=_given_frames(frames, text.tokens))
        durations = text.frames_per_token.cpu()  # the one host sync: frame counts set shapes
        counts = tuple(int(n) for n in durations.sum(dim=1))
        sizes = Ragged(counts, max(counts), self.device, text.frames_per_token.sum(dim=1))
        alignment = _alignment(text.frames_per_token, sizes.size)
        en = text.d.transpose(-1, -2) @ alignment
        predictor_style = self._predictor_styles(text.styles[:, STYLE_SPLIT:])
        f0, energy = f0_and_noise(self.model.predictor, en, predictor_style, sizes)
        asr = _text_encoder(self.model.text_encoder, text.input_ids, text.tokens) @ alignment
        return Acoustics(
            asr=asr,
            f0=f0,
            energy=energy,
            styles=text.styles,
            frames=sizes,
            durations=[durations[i, :n].tolist() for i, n in enumerate(text.tokens.lengths)],
        )

    @torch.inference_mode()
    def decode(
        self, acoustics: Acoustics, rngs: Sequence[torch.Generator | None] | None = None
    ) -> list[torch.Tensor]:
        """The decoder: each item's waveform from its aligned features, F0 and energy."""
        a = acoustics
        style = self.decoder_style(a.styles)
        draws = rngs or [None] * len(a.frames.lengths)
        return decode(self.model.decoder, a.asr, a.f0, a.energy, style, a.frames, draws)

    def decoder_style(self, styles: torch.Tensor) -> StyleOf:
        """The decoder's style projections of ``(B, 256)`` style rows."""
        return self._decoder_styles(styles[:, :STYLE_SPLIT])

    @torch.inference_mode()
    def durations(
        self, token_ids: Sequence[Sequence[int]], styles: torch.Tensor, speeds: Sequence[float]
    ) -> list[list[int]]:
        """Only the frames each token gets (PL-BERT and the duration predictor; no decoder)."""
        text = self._text_side(token_ids, styles.to(self.device), speeds)
        frames = text.frames_per_token.cpu()
        return [frames[i, :n].tolist() for i, n in enumerate(text.tokens.lengths)]

    def _text_side(
        self, token_ids: Sequence[Sequence[int]], styles: torch.Tensor, speeds: Sequence[float]
    ) -> _TextSide:
        model, device = self.model, self.device
        sizes = tuple(len(ids) for ids in token_ids)
        counts = torch.tensor(sizes, device=device)
        tokens = Ragged(sizes, max(sizes), device, counts)
        input_ids = torch.zeros(len(token_ids), tokens.size, dtype=torch.long)
        for item, ids in enumerate(token_ids):
            input_ids[item, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        input_ids = input_ids.to(device)
        steps = torch.arange(tokens.size, device=device)
        valid = steps[None, :] < counts[:, None]  # (B, T)
        bert = model.bert(input_ids, attention_mask=valid.int())
        d_en = model.bert_encoder(bert).transpose(-1, -2)
        predictor_style = self._predictor_styles(styles[:, STYLE_SPLIT:])
        d = _duration_encoder(
            model.predictor.text_encoder, d_en, styles[:, STYLE_SPLIT:], predictor_style, tokens
        )
        x = run_lstm(model.predictor.lstm, d, tokens.lengths)
        speed = torch.tensor(list(speeds), device=device, dtype=x.dtype)[:, None]
        duration = torch.sigmoid(model.predictor.duration_proj(x)).sum(dim=-1) / speed
        frames_per_token = torch.round(duration).clamp(min=1).long() * valid
        return _TextSide(input_ids, tokens, styles, d, frames_per_token)


@dataclass(frozen=True)
class _TextSide:
    """What the text side hands the acoustic side."""

    input_ids: torch.Tensor  # (B, T) padded token ids
    tokens: Ragged  # each item's token count
    styles: torch.Tensor  # (B, 256) on the device
    d: torch.Tensor  # (B, T, C + style): the duration encoder's output
    frames_per_token: torch.Tensor  # (B, T), 0 on padding


def _given_frames(frames: Sequence[Sequence[int]], tokens: Ragged) -> torch.Tensor:
    """``(B, T)`` frame counts from per-item lists, one positive count per token."""
    if [len(f) for f in frames] != list(tokens.lengths) or any(n < 1 for f in frames for n in f):
        raise ValueError(f"frames must give each of the {tokens.lengths} tokens at least one")
    given = torch.zeros(len(frames), tokens.size, dtype=torch.long)
    for item, counts in enumerate(frames):
        given[item, : len(counts)] = torch.tensor(list(counts), dtype=torch.long)
    return given.to(tokens.device)


def _remove_weight_norm(model: nn.Module) -> None:
    """Fold every weight-norm reparametrisation into a plain weight."""
    for module in model.modules():
        if hasattr(module, "weight_g") and hasattr(module, "weight_v"):
            nn.utils.remove_weight_norm(module)


def _alignment(frames_per_token: torch.Tensor, size: int) -> torch.Tensor:
    """The ``(B, T, frames)`` one-hot alignment: token t owns its run of frames."""
    end = frames_per_token.cumsum(dim=1)
    start = end - frames_per_token
    frame = torch.arange(size, device=frames_per_token.device)[None, None, :]
    return ((frame >= start[..., None]) & (frame < end[..., None])).float()


def _duration_encoder(
    encoder: nn.Module, d_en: torch.Tensor, style: torch.Tensor, styles: StyleOf, tokens: Ragged
) -> torch.Tensor:
    """kokoro's ``DurationEncoder`` on ``(B, C, T)``; returns ``(B, T, C + style)``."""
    keep = tokens.keep
    keep = None if keep is None else keep.transpose(1, 2)  # (B, T, 1)
    broadcast = style[:, None, :].expand(-1, tokens.size, -1)
    x = torch.cat([d_en.transpose(1, 2), broadcast], dim=-1)
    x = x if keep is None else x * keep
    for block in encoder.lstms:
        if isinstance(block, nn.LSTM):
            x = run_lstm(block, x, tokens.lengths)
            continue
        gamma, beta = styles(block.fc).unsqueeze(1).chunk(2, dim=-1)
        x = nn.functional.layer_norm(x, (block.channels,), eps=block.eps)
        x = torch.cat([(1 + gamma) * x + beta, broadcast], dim=-1)
        x = x if keep is None else x * keep
    return x


def _text_encoder(encoder: nn.Module, input_ids: torch.Tensor, tokens: Ragged) -> torch.Tensor:
    """kokoro's ``TextEncoder``: ``(B, T)`` ids -> ``(B, C, T)`` features, padding zeroed."""
    keep = tokens.keep
    x = encoder.embedding(input_ids).transpose(1, 2)
    x = x if keep is None else x * keep
    for block in encoder.cnn:
        x = block(x)
        x = x if keep is None else x * keep
    x = run_lstm(encoder.lstm, x.transpose(1, 2), tokens.lengths).transpose(1, 2)
    return x if keep is None else x * keep
