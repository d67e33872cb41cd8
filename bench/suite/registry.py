"""Every model of the suite: its name, family, library, the builder module and factories that
make it, and the entry of PyTorch's benchmark lists it stands for.

Importing this module imports no model library (bench/suite.py runs each model in its own
process); a factory is `bench/suite/<module>.py:<factory>`, for `kernelscope compile`."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent

FAMILIES = ("decoder", "encoder-decoder", "encoder", "moe", "vision-transformer", "conv", "diffusion-unet")
# The model that stands for its family where one per family is run (CI: tests/engine/test_suite.py).
REPRESENTATIVES = {
    "decoder": "llama", "encoder-decoder": "bart", "encoder": "bert", "moe": "mixtral",
    "vision-transformer": "deit", "conv": "resnet18", "diffusion-unet": "unet",
}
# `--target cpu` compiles every C++ kernel with the system's C++ compiler (seconds each on a
# 2-core machine), so it runs one model per family by default: the family's smallest (fewest
# kernels in bench/results/suite_virtual_cuda_torch2.13.json). CI: tests/engine/test_cpp_suite.py.
CPU_MODELS = {
    "decoder": "llama", "encoder-decoder": "blenderbot_small", "encoder": "distilbert", "moe": "mixtral",
    "vision-transformer": "vit_dinov2", "conv": "repvgg", "diffusion-unet": "unet",
}
HF_LIST = "huggingface_models_list.txt"
TIMM_LIST = "timm_models_list.txt"
TORCHBENCH_LIST = "torchbench_models_list.txt"


@dataclass(frozen=True)
class SuiteModel:
    name: str
    family: str
    library: str
    module: str  # bench/suite/<module>.py
    listed_as: str  # the entry of PyTorch's benchmark lists it stands for ("" where none)
    inference: str = ""  # factory names; default: the model's name, and name + "_train"
    training: str = ""

    def factory(self, train: bool) -> str:
        return (self.training or f"{self.name}_train") if train else (self.inference or self.name)

    def spec(self, train: bool) -> str:
        return f"{HERE / self.module}.py:{self.factory(train)}"

    def shown_spec(self, train: bool) -> str:
        """The target as the repository names it: bench/suite/<module>.py:<factory>."""
        return f"bench/suite/{self.module}.py:{self.factory(train)}"


def _models(family: str, library: str, module: str, entries: list[tuple[str, str]]) -> list[SuiteModel]:
    return [SuiteModel(name, family, library, module, listed) for name, listed in entries]


MODELS: list[SuiteModel] = [
    *_models("decoder", "transformers", "hf_decoders", [
        ("llama", f"{HF_LIST}: meta-llama/Llama-3.2-1B"),
        ("mistral", f"{HF_LIST}: mistralai/Mistral-7B-Instruct-v0.3"),
        ("qwen3", f"{HF_LIST}: Qwen/Qwen3-0.6B"),
        ("gemma2", f"{HF_LIST}: google/gemma-2-2b"),
        ("gemma3", f"{HF_LIST}: google/gemma-3-4b-it"),
        ("gpt2", f"{HF_LIST}: DistillGPT2"),
        ("opt", f"{HF_LIST}: OPTForCausalLM"),
        ("gpt_neo", f"{HF_LIST}: GPTNeoForCausalLM"),
        ("gptj", f"{HF_LIST}: GPTJForCausalLM"),
        ("xglm", f"{HF_LIST}: XGLMForCausalLM"),
        ("trocr", f"{HF_LIST}: TrOCRForCausalLM"),
    ]),
    *_models("moe", "transformers", "hf_moe", [
        ("gpt_oss", f"{HF_LIST}: openai/gpt-oss-20b"),
        ("mixtral", ""),
    ]),
    *_models("encoder-decoder", "transformers", "hf_encoder_decoders", [
        ("t5", f"{HF_LIST}: T5ForConditionalGeneration, T5Small"),
        ("mt5", f"{HF_LIST}: MT5ForConditionalGeneration"),
        ("bart", f"{HF_LIST}: BartForConditionalGeneration"),
        ("mbart", f"{HF_LIST}: MBartForConditionalGeneration"),
        ("plbart", f"{HF_LIST}: PLBartForConditionalGeneration"),
        ("pegasus", f"{HF_LIST}: PegasusForConditionalGeneration"),
        ("blenderbot", f"{HF_LIST}: BlenderbotForConditionalGeneration"),
        ("blenderbot_small", f"{HF_LIST}: BlenderbotSmallForConditionalGeneration"),
        ("m2m100", f"{HF_LIST}: M2M100ForConditionalGeneration"),
        ("whisper", f"{HF_LIST}: openai/whisper-tiny"),
    ]),
    *_models("encoder", "transformers", "hf_encoders", [
        ("bert", f"{HF_LIST}: BertForMaskedLM"),
        ("albert", f"{HF_LIST}: AlbertForMaskedLM"),
        ("distilbert", f"{HF_LIST}: DistilBertForMaskedLM"),
        ("roberta", f"{HF_LIST}: RobertaForQuestionAnswering"),
        ("electra", f"{HF_LIST}: ElectraForQuestionAnswering"),
        ("megatron_bert", f"{HF_LIST}: MegatronBertForQuestionAnswering"),
        ("deberta_v2", f"{HF_LIST}: DebertaV2ForMaskedLM"),
        ("mobilebert", f"{HF_LIST}: MobileBertForMaskedLM"),
        ("layoutlm", f"{HF_LIST}: LayoutLMForMaskedLM"),
        ("convbert", f"{HF_LIST}: YituTechConvBert"),
        ("fnet", f"{HF_LIST}: GoogleFnet"),
        ("longformer", f"{HF_LIST}: AllenaiLongformerBase"),
        ("xlnet", f"{HF_LIST}: XLNetLMHeadModel"),
    ]),
    *_models("vision-transformer", "timm", "timm_vision", [
        ("beit", f"{TIMM_LIST}: beit_base_patch16_224"),
        ("deit", f"{TIMM_LIST}: deit_base_distilled_patch16_224"),
        ("vit_dinov2", f"{TIMM_LIST}: vit_base_patch14_dinov2.lvd142m"),
        ("vit_siglip", f"{TIMM_LIST}: vit_base_patch16_siglip_256"),
        ("swin", f"{TIMM_LIST}: swin_base_patch4_window7_224"),
        ("visformer", f"{TIMM_LIST}: visformer_small"),
        ("mobilevit", f"{TIMM_LIST}: mobilevit_s"),
    ]),
    *_models("conv", "timm", "timm_vision", [
        ("convnextv2", f"{TIMM_LIST}: convnextv2_nano.fcmae_ft_in22k_in1k"),
        ("nfnet_f0", f"{TIMM_LIST}: dm_nfnet_f0"),
        ("repvgg", f"{TIMM_LIST}: repvgg_a2"),
        ("ghostnet", f"{TIMM_LIST}: ghostnet_100"),
        ("inception_v3", f"{TIMM_LIST}: inception_v3, adv_inception_v3"),
        ("mobilenetv3", f"{TIMM_LIST}: mobilenetv3_large_100"),
        ("efficientnet", f"{TIMM_LIST}: tf_efficientnet_b0"),
    ]),
    *_models("conv", "torchvision", "torchvision_convnets", [
        ("resnet18", f"{TORCHBENCH_LIST}: resnet18"),
        ("resnet50", f"{TORCHBENCH_LIST}: resnet50"),
        ("resnext50", f"{TORCHBENCH_LIST}: resnext50_32x4d"),
        ("densenet121", f"{TORCHBENCH_LIST}: densenet121"),
        ("shufflenet_v2", f"{TORCHBENCH_LIST}: shufflenet_v2_x1_0"),
        ("mobilenet_v2", f"{TORCHBENCH_LIST}: mobilenet_v2"),
        ("mnasnet", f"{TORCHBENCH_LIST}: mnasnet1_0"),
        ("squeezenet", f"{TORCHBENCH_LIST}: squeezenet1_1"),
        ("alexnet", f"{TORCHBENCH_LIST}: alexnet"),
        ("vgg16", f"{TORCHBENCH_LIST}: vgg16"),
    ]),
    *_models("diffusion-unet", "diffusers", "diffusers_unet", [
        ("unet", ""),
    ]),
]
BY_NAME = {model.name: model for model in MODELS}
assert len(BY_NAME) == len(MODELS), "two suite models share a name"
