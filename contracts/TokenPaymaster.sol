// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {PaymasterERC20Guarantor} from "@openzeppelin/contracts/account/paymaster/extensions/PaymasterERC20Guarantor.sol";
import {ERC4337Utils, PackedUserOperation} from "@openzeppelin/contracts/account/utils/ERC4337Utils.sol";
import {IEntryPoint} from "@openzeppelin/contracts/interfaces/IERC4337.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignerECDSA} from "@openzeppelin/contracts/utils/cryptography/signers/SignerECDSA.sol";

/// @title TokenPaymaster
/// @notice Pays the gas of UserOperations and charges the account in an ERC-20 at a price the
/// paymaster service quoted and signed, composed of OpenZeppelin Contracts' audited parts:
/// PaymasterERC20 pulls the worst-case cost in tokens during validation and refunds the rest after
/// the operation; PaymasterERC20Guarantor lets a guarantor prefund instead, for an account whose
/// batch approves this paymaster only when it runs (after validation), and pulls the cost from the
/// account in postOp. SignerECDSA holds the service key; Ownable guards the funds and key rotation.
/// @dev paymasterData = validAfter 6 ‖ validUntil 6 ‖ token 20 ‖ tokenPerNative 32 ‖ guarantor 20 ‖
/// signature (packages/server/src/paymaster/data.ts, `encodeTokenData`).
contract TokenPaymaster is PaymasterERC20Guarantor, EIP712, SignerECDSA, Ownable {
    using ERC4337Utils for *;

    /// @dev data.ts's `TOKEN_TYPES`: PaymasterSigner's UserOperationRequest fields, then the quote.
    bytes32 private constant TOKEN_USER_OPERATION_REQUEST_TYPEHASH =
        keccak256(
            "TokenUserOperationRequest(address sender,uint256 nonce,bytes initCode,bytes callData,bytes32 accountGasLimits,uint256 preVerificationGas,bytes32 gasFees,uint256 paymasterVerificationGasLimit,uint256 paymasterPostOpGasLimit,uint48 validAfter,uint48 validUntil,address token,uint256 tokenPerNative,address guarantor)"
        );

    /// @notice The service key changed (`setSigner`): quotes signed by the old key no longer validate.
    event SignerSet(address indexed signer);

    constructor(
        address signerAddr,
        address initialOwner
    ) EIP712("Latchkey Token Paymaster", "1") SignerECDSA(signerAddr) Ownable(initialOwner) {
        emit SignerSet(signerAddr);
    }

    /// @notice EntryPoint v0.8 at its canonical address, the one our accounts use (OpenZeppelin
    /// 5.7's default is v0.9): only it may call validatePaymasterUserOp and postOp.
    function entryPoint() public pure override returns (IEntryPoint) {
        return ERC4337Utils.ENTRYPOINT_V08;
    }

    /// @notice Adds the ETH sent to this paymaster's EntryPoint deposit, which pays the gas. Anyone may.
    function deposit() external payable {
        _deposit(msg.value);
    }

    /// @notice Moves `value` wei of the EntryPoint deposit to `to`.
    function withdraw(address payable to, uint256 value) external onlyOwner {
        _withdraw(to, value);
    }

    /// @notice Stakes the ETH sent in the EntryPoint (what public-mempool bundlers require of a
    /// paymaster that touches token storage during validation).
    function addStake(uint32 unstakeDelaySec) external payable onlyOwner {
        _addStake(msg.value, unstakeDelaySec);
    }

    /// @notice Starts the stake's unstake delay.
    function unlockStake() external onlyOwner {
        _unlockStake();
    }

    /// @notice Moves the unlocked stake to `to`.
    function withdrawStake(address payable to) external onlyOwner {
        _withdrawStake(to);
    }

    /// @notice Moves the tokens collected as gas payment (`type(uint256).max`: all of them).
    function withdrawTokens(IERC20 token, address recipient, uint256 amount) external onlyOwner {
        _withdrawTokens(token, recipient, amount);
    }

    /// @notice Rotates the service key. SignerECDSA's setter is internal, for constructors.
    function setSigner(address signerAddr) external onlyOwner {
        _setSigner(signerAddr);
        emit SignerSet(signerAddr);
    }

    /// @dev PaymasterERC20 leaves where the token and its price come from to us: the signed quote
    /// in paymasterData. A short paymasterData, mixed block-range flags (as PaymasterSigner rejects
    /// them) or a signature by any key but the signer's fail validation before anything is pulled.
    function _fetchDetails(
        PackedUserOperation calldata userOp,
        bytes32 /* userOpHash */
    ) internal view override returns (uint256 validationData, IERC20 token, uint256 tokenPerNative) {
        bytes calldata data = userOp.paymasterData();
        if (data.length < 84) return (ERC4337Utils.SIG_VALIDATION_FAILED, IERC20(address(0)), 0);
        uint48 validAfter = uint48(bytes6(data[0:6]));
        uint48 validUntil = uint48(bytes6(data[6:12]));
        token = IERC20(address(bytes20(data[12:32])));
        tokenPerNative = uint256(bytes32(data[32:64]));
        if ((validAfter ^ validUntil) & ERC4337Utils.BLOCK_RANGE_FLAG != 0)
            return (ERC4337Utils.SIG_VALIDATION_FAILED, token, tokenPerNative);
        bool signed = _rawSignatureValidation(_hashTypedDataV4(_requestStructHash(userOp, data)), data[84:]);
        return (signed.packValidationData(validAfter, validUntil), token, tokenPerNative);
    }

    /// @dev The guarantor is part of the signed quote, so only the service can name one (its own
    /// account, which approved this paymaster); zero means the account prefunds itself. Runs after
    /// _fetchDetails has checked the signature.
    function _fetchGuarantor(PackedUserOperation calldata userOp) internal pure override returns (address) {
        bytes calldata data = userOp.paymasterData();
        return data.length < 84 ? address(0) : address(bytes20(data[64:84]));
    }

    /// @dev The EIP-712 struct hash of TokenUserOperationRequest, in two abi.encode halves (all
    /// static words, so their concatenation is the one encoding) to stay within the stack.
    function _requestStructHash(PackedUserOperation calldata userOp, bytes calldata data) private pure returns (bytes32) {
        return
            keccak256(
                bytes.concat(
                    abi.encode(
                        TOKEN_USER_OPERATION_REQUEST_TYPEHASH,
                        userOp.sender,
                        userOp.nonce,
                        keccak256(userOp.initCode),
                        keccak256(userOp.callData),
                        userOp.accountGasLimits,
                        userOp.preVerificationGas,
                        userOp.gasFees
                    ),
                    abi.encode(
                        userOp.paymasterVerificationGasLimit(),
                        userOp.paymasterPostOpGasLimit(),
                        uint48(bytes6(data[0:6])),
                        uint48(bytes6(data[6:12])),
                        address(bytes20(data[12:32])),
                        uint256(bytes32(data[32:64])),
                        address(bytes20(data[64:84]))
                    )
                )
            );
    }
}
