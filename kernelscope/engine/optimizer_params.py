"""Which optimizer parameter each input of a compiled optimizer step is, so a foreach
sub-kernel's answer can say which `param_groups[i]` and which parameters it updates.

A compiled `opt.step()` reads the optimizer's parameters as Dynamo graph attributes
(static; Dynamo names them by where it read them, `self___param_groups_0__params___1`: group
and place in the group) and the gradients as inputs. While Inductor compiles, Dynamo's
translator of the frame is still current: the optimizers are among that frame's locals and
globals (`self` for a compiled `opt.step`). A gradient input is matched by identity to a
parameter's `.grad` (or the parameter, or a tensor of its state); an attribute's name from
`param_groups[i]["param_names"]` (present when the optimizer was built from named
parameters). AOTAutograd's input descriptors (`desc`, torch >= 2.9) then name the Dynamo
attribute or input each post-grad placeholder is.

Where no optimizer is found (one reached only through an attribute of a local, `self.opt`)
a parameter attribute still gives its group, index and shape, without a name. A state
attribute (`momentum_buffer`, `exp_avg`, Adam's `step`) is the state of the parameter at
its place among `state`'s keys, read from the one optimizer found (none: not named).
"""
from __future__ import annotations

import re
from typing import Any

from kernelscope.engine import inductor_reads
from kernelscope.run_record import OptimizerParam

# Dynamo's attribute name of a parameter it reads as `<optimizer>.param_groups[0]['params'][1]`
_PARAM_ATTRIBUTE = re.compile(r"param_groups_(\d+)__params___(\d+)$")
# ... and of a state tensor it reads as `<optimizer>.state[list(<optimizer>.state.keys())[1]]['step']`
_STATE_ATTRIBUTE = re.compile(r"_state_list_dict_keys_L__\w*?_state___(\d+)_")


def dynamo_inputs(gm) -> dict[tuple[str, str | int], OptimizerParam]:
    """Dynamo's graph `gm` (before AOTAutograd): ("attr", target) and ("input", index) of
    each attribute and input that is an optimizer's parameter, gradient or state tensor."""
    optimizers = _current_optimizers()
    tensors = _optimizer_tensors(optimizers)
    found: dict[tuple[str, str | int], OptimizerParam] = {}
    inputs = 0
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = _attribute(gm, node.target)
            param = _from_attribute_name(node.target, value, optimizers) or _from_state_name(node.target, optimizers)
            if param is not None:
                found[("attr", node.target)] = param
        elif node.op == "placeholder":
            grapharg = node.meta.get("grapharg")
            example = getattr(grapharg, "_example", None)
            example = example() if callable(example) else example  # a TensorWeakRef
            if example is not None and id(example) in tensors:
                found[("input", inputs)] = tensors[id(example)]
            inputs += 1
    return found


def post_grad_inputs(post_grad_gm, dynamo: dict[tuple[str, str | int], OptimizerParam]) -> dict[str, OptimizerParam]:
    """The post-grad graph's placeholders (`arg0_1`) that are an optimizer's tensors."""
    if post_grad_gm is None or not dynamo:
        return {}
    found = {}
    for node in post_grad_gm.graph.nodes:
        if node.op == "placeholder":
            descriptor = inductor_reads.input_descriptor(node)
            if descriptor in dynamo:
                found[node.name] = dynamo[descriptor]
    return found


def _optimizer_tensors(optimizers: list) -> dict[int, OptimizerParam]:
    """id(tensor) -> the parameter it is, is the gradient of or is state of."""
    tensors: dict[int, OptimizerParam] = {}
    for optimizer in optimizers:
        for group_index, group in enumerate(optimizer.param_groups):
            names = group.get("param_names") or []
            for index, param in enumerate(group["params"]):
                name = names[index] if index < len(names) else ""
                ref = OptimizerParam(group_index, index, str(name), list(param.shape))
                state = optimizer.state.get(param, {}) if hasattr(optimizer, "state") else {}
                for tensor in (param, param.grad, *state.values()):
                    if tensor is not None and hasattr(tensor, "shape"):
                        tensors.setdefault(id(tensor), ref)
    return tensors


def _current_optimizers() -> list[Any]:
    """The torch.optim.Optimizer objects among the compiled frame's locals and globals."""
    import torch

    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        translator = InstructionTranslator.current_tx()
    except (ImportError, AttributeError, AssertionError):
        return []
    root = getattr(getattr(translator, "output", None), "root_tx", None)
    if root is None:
        return []
    values = [*getattr(root, "f_locals", {}).values(), *getattr(root, "f_globals", {}).values()]
    optimizers = [value for value in values if isinstance(value, torch.optim.Optimizer)]
    return list({id(optimizer): optimizer for optimizer in optimizers}.values())


def _attribute(gm, target: str):
    value = gm
    for part in target.split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


def _from_attribute_name(target: str, value, optimizers: list) -> OptimizerParam | None:
    """The parameter Dynamo read as `param_groups[G]['params'][I]`, named by the one
    optimizer whose param_groups hold a parameter of its shape there."""
    matched = _PARAM_ATTRIBUTE.search(target)
    if matched is None:
        return None
    group, index = int(matched.group(1)), int(matched.group(2))
    shape = list(getattr(value, "shape", ()))
    names = {_name_at(optimizer, group, index, shape) for optimizer in optimizers} - {None}
    return OptimizerParam(group, index, names.pop() if len(names) == 1 else "", shape)


def _name_at(optimizer, group: int, index: int, shape: list[int]) -> str | None:
    groups = optimizer.param_groups
    if group >= len(groups) or index >= len(groups[group]["params"]):
        return None
    if list(groups[group]["params"][index].shape) != shape:
        return None
    names = groups[group].get("param_names") or []
    return str(names[index]) if index < len(names) else ""


def _from_state_name(target: str, optimizers: list) -> OptimizerParam | None:
    """The parameter whose state Dynamo read as `state[list(state.keys())[K]][...]`, when
    one optimizer was found: the K-th key of its state, found in its param_groups."""
    matched = _STATE_ATTRIBUTE.search(target)
    if matched is None or len(optimizers) != 1:
        return None
    keys = list(optimizers[0].state.keys())
    key = int(matched.group(1))
    if key >= len(keys):
        return None
    return _optimizer_tensors(optimizers).get(id(keys[key]))
