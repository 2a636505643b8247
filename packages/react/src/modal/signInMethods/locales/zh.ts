import type { LinkingMessages } from '../en.js'

const zh: LinkingMessages = {
  signInMethods: '登录方式',
  loadingMethods: '正在加载登录方式…',
  signInToManage: '登录应用后即可查看和更改登录方式。',
  kindEmail: '邮箱',
  kindPasskey: '通行密钥',
  kindWallet: '钱包',
  kindOAuth: '社交账号',
  linkedOn: '{date} 关联',
  remove: '移除',
  removeMethod: '移除 {label}',
  onlyMethod: '这是你唯一的登录方式。移除前请先添加另一种。',
  addMethod: '添加登录方式',
  emailToLink: '要添加的邮箱地址',
  sendCode: '发送验证码',
  typeCodeInFrame: '请在对话框中输入发送到 {email} 的验证码。',
  signInWalletToLink: '请在 {name} 中签署消息',
  linking: '正在关联…',
  methodLinked: '已关联 {label}。现在可以用它登录。',
  removing: '正在移除…',
  methodRemoved: '已移除 {label}。',
  secondFactor: '第二因素',
  mfaOff: '尚未设置第二因素。',
  mfaOn: '已设置身份验证器应用。',
  setUpTotp: '设置身份验证器应用',
  settingUpTotp: '正在设置身份验证器应用…',
  totpEnrolled: '身份验证器应用已设置。请将恢复码保存在安全的地方。',
  methodsStatus: '登录方式状态',
}

export default zh
